package units

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// vendorHashLine is package.nix's vendorHash, an SRI sha256.
var vendorHashLine = regexp.MustCompile(`(?m)^\s*vendorHash = "(sha256-[A-Za-z0-9+/]{43}=)";`)

// TestNixVendorHash: nix/package.nix's vendorHash is what buildGoModule
// will find, the NAR sha256 of the directory `go mod vendor` makes from
// go.mod and go.sum (its goModules derivation runs just that and hashes the
// result). A go.mod or go.sum changed without `make vendor-hash` fails here
// instead of at the owner's first nix build. It reads the module cache, so
// it runs offline once the modules were fetched, as every build needs.
func TestNixVendorHash(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to vendor the modules: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(nixDir, "package.nix"))
	if err != nil {
		t.Fatal(err)
	}
	m := vendorHashLine.FindSubmatch(src)
	if m == nil {
		t.Fatal(`nix/package.nix has no vendorHash = "sha256-…"; run make vendor-hash`)
	}
	vendor := filepath.Join(t.TempDir(), "vendor")
	cmd := exec.Command(goTool, "mod", "vendor", "-o", vendor)
	cmd.Dir = filepath.Join(nixDir, "..")
	// As buildGoModule runs it: no GOFLAGS of the caller's, no workspace,
	// the local toolchain.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod vendor: %v\n%s", err, out)
	}
	sum, err := narSHA256(vendor)
	if err != nil {
		t.Fatal(err)
	}
	if got := "sha256-" + base64.StdEncoding.EncodeToString(sum); got != string(m[1]) {
		t.Errorf("nix/package.nix has vendorHash %s, but the modules go.mod and go.sum name give %s: run make vendor-hash", m[1], got)
	}
}
