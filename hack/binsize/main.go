// Command binsize groups the symbols of a Go binary by package and prints
// the largest packages (or module prefixes) by bytes, from
// `go tool nm -size`. It shows what a dependency costs the binary:
//
//	go build -o /tmp/sg ./cmd/shardgate
//	go run ./hack/binsize -top 40 /tmp/sg
//	go run ./hack/binsize -depth 3 /tmp/sg   # grouped by the first 3 path elements
package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

func main() {
	top := flag.Int("top", 40, "packages to print")
	depth := flag.Int("depth", 0, "group by the first N elements of the import path (0: the whole package path)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: binsize [-top N] [-depth N] BINARY")
		os.Exit(2)
	}
	out, err := exec.Command("go", "tool", "nm", "-size", flag.Arg(0)).Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go tool nm %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	bss, err := bssRanges(flag.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	sizes := map[string]int64{}
	var total, zeroed int64
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		// address size type name
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		if addr, err := strconv.ParseUint(f[0], 16, 64); err == nil && bss(addr) {
			zeroed += n // no bytes in the file, no RSS until written
			continue
		}
		p := pkgOf(strings.Join(f[3:], " "), *depth)
		sizes[p] += n
		total += n
	}
	type row struct {
		pkg  string
		size int64
	}
	rows := make([]row, 0, len(sizes))
	for p, n := range sizes {
		rows = append(rows, row{p, n})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].size > rows[j].size })
	fmt.Printf("%10.1f KiB  total symbols (%d groups; %.1f KiB more of zeroed data, .bss and .noptrbss, not counted)\n",
		float64(total)/1024, len(rows), float64(zeroed)/1024)
	for i, r := range rows {
		if i == *top {
			break
		}
		fmt.Printf("%10.1f KiB  %s\n", float64(r.size)/1024, r.pkg)
	}
}

// pkgOf is the package of a symbol name: its import path up to the first
// dot after the last slash (go:itab.*, type:* and the like count under
// their own prefix), cut to depth path elements when depth > 0.
func pkgOf(sym string, depth int) string {
	for _, pre := range []string{"type:", "go:itab.", "go:", "runtime."} {
		if strings.HasPrefix(sym, pre) && pre != "runtime." {
			if pre == "type:" && strings.HasPrefix(sym, "type:.") {
				return "type:(runtime)"
			}
			if pre == "type:" || pre == "go:itab." {
				sym = strings.TrimPrefix(strings.TrimPrefix(sym, pre), "*")
				break
			}
			return pre
		}
	}
	sym = strings.TrimLeft(sym, "*(")
	// A generic instantiation counts under the generic's package.
	if i := strings.IndexAny(sym, "[,"); i >= 0 {
		sym = sym[:i]
	}
	if strings.HasPrefix(sym, "go.shape") || strings.HasPrefix(sym, "go:") {
		return "go:"
	}
	slash := strings.LastIndex(sym, "/")
	if i := strings.Index(sym[slash+1:], "."); i >= 0 {
		sym = sym[:slash+1+i]
	}
	if depth > 0 {
		if parts := strings.Split(sym, "/"); len(parts) > depth {
			sym = strings.Join(parts[:depth], "/")
		}
	}
	return sym
}

// bssRanges says whether an address is in the binary's .bss or .noptrbss
// (ELF binaries; anything else counts every symbol).
func bssRanges(path string) (func(uint64) bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return func(uint64) bool { return false }, nil
	}
	defer f.Close()
	var ranges [][2]uint64
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOBITS && s.Flags&elf.SHF_ALLOC != 0 {
			ranges = append(ranges, [2]uint64{s.Addr, s.Addr + s.Size})
		}
	}
	return func(a uint64) bool {
		for _, r := range ranges {
			if a >= r[0] && a < r[1] {
				return true
			}
		}
		return false
	}, nil
}
