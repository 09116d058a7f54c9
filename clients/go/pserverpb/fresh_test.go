package pserverpb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestStubsAreFresh regenerates the stubs from proto/ into a temporary directory and compares
// them with the files in the tree, the sentinel errors and the error rules of package pserver
// (error_codes.go, error_rules.go) included: a change to proto/ must come with
// `nx run client-go:generate`.
func TestStubsAreFresh(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command("bash", "../tools/generate.sh", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v\n%s", err, msg)
	}
	fresh, err := filepath.Glob(filepath.Join(out, "*.pb.go"))
	if err != nil || len(fresh) == 0 {
		t.Fatalf("no generated files in %s (%v)", out, err)
	}
	kept, _ := filepath.Glob("*.pb.go")
	if len(kept) != len(fresh) {
		t.Errorf("%d generated files in the tree, %d generated now", len(kept), len(fresh))
	}
	for _, path := range fresh {
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(filepath.Base(path))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `npx nx run client-go:generate`", filepath.Base(path))
		}
	}
	for _, name := range []string{"error_codes.go", "error_rules.go"} {
		want, _ := os.ReadFile(filepath.Join(out, name))
		got, err := os.ReadFile(filepath.Join("..", "pserver", name))
		if err != nil || len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("pserver/%s is stale: run `npx nx run client-go:generate`", name)
		}
	}
}
