package main

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
)

// TestDropPageCache checks that dropPageCache leaves a file's pages out of
// the page cache, so that the next start of a binary reads it cold. A
// freshly written file is resident (dirty, then clean after the sync); it
// must not be after the drop, not even when it was dirty.
func TestDropPageCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bin")
	data := make([]byte, 8<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	res, total, err := residentPages(path)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(data)/os.Getpagesize() {
		t.Fatalf("mincore saw %d pages, want %d", total, len(data)/os.Getpagesize())
	}
	if res < total/2 {
		t.Skipf("a file just written has %d of %d pages resident: this file system does not keep it in the page cache", res, total)
	}
	if err := dropPageCache(path); err != nil {
		t.Fatal(err)
	}
	res, _, err = residentPages(path)
	if err != nil {
		t.Fatal(err)
	}
	if res > total/10 {
		t.Fatalf("%d of %d pages still resident after the drop", res, total)
	}
	// Read back: resident again, and the same bytes.
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(data) {
		t.Fatal("the file changed")
	}
	if res, _, err = residentPages(path); err != nil || res < total/2 {
		t.Fatalf("after a read, %d of %d pages resident (err %v): mincore does not see the cache", res, total, err)
	}
}
