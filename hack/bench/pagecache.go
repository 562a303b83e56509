package main

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dropPageCache evicts the file at path from the page cache, so that the
// process about to start from it reads its binary the way it does on a
// node that has just pulled its image: page by page, through the
// kernel's own readahead.
//
// Without it, the binary's resident file pages (in RSS) depend on how the
// file entered the page cache, not on the program: the same bytes touch
// up to 8 MiB more when the linker has just written them than after a
// copy or a cold read, because the page cache then holds them in other
// folio sizes, and a fault maps a whole folio. The bench builds
// shardgate's binary fresh and reads the peer's from an older build, so
// it drops both before each start.
//
// Dirty pages cannot be dropped, so the file is synced first. Pages
// another process still maps stay resident.
func dropPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	if err := unix.Fdatasync(fd); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("drop %s from the page cache: %w", path, err)
	}
	return nil
}

// residentPages returns how many of the file's pages are in the page
// cache, and how many it has (mincore over a read-only mapping).
func residentPages(path string) (resident, total int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	if st.Size() == 0 {
		return 0, 0, nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, fmt.Errorf("map %s: %w", path, err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, 0, fmt.Errorf("mincore %s: %w", path, e)
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident++
		}
	}
	return resident, len(vec), nil
}
