package load

import (
	"os"
	"testing"
)

// TestProcCPU reads this process's own CPU time from /proc twice: it is
// there and does not go backwards. (Linux only: the file's build
// constraint, so that the test never skips where it is built.)
func TestProcCPU(t *testing.T) {
	a, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if b, err := procCPU(os.Getpid()); err != nil || b < a {
		t.Fatalf("own CPU went from %v to %v (%v)", a, b, err)
	}
}
