package units

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFlakeOutputs evaluates flake.nix's outputs with nix-instantiate,
// nixpkgs stubbed (the tests have no network): a package per Linux system
// built from nix/package.nix with Go 1.26, its vendorHash and the flake's
// revision, and a NixOS module that imports nix/module.nix and makes that
// package its default.
func TestFlakeOutputs(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join(nixDir, ".."))
	stub, _ := filepath.Abs("testdata/stub-nixpkgs.nix")
	var got struct {
		Description string   `json:"description"`
		Inputs      []string `json:"inputs"`
		Systems     []string `json:"systems"`
		Package     struct {
			Pname, Version, VendorHash, Go string
			SubPackages                    []string
		} `json:"package"`
		Imports        []string `json:"imports"`
		ModulePackage  string   `json:"modulePackage"`
		ModulePriority int      `json:"modulePriority"`
	}
	nixEval(t, strings.NewReplacer("@root@", root, "@stub@", stub).Replace(flakeExpr), &got)
	if got.Description == "" || !slices.Equal(got.Inputs, []string{"nixpkgs"}) {
		t.Errorf("description %q, inputs %v", got.Description, got.Inputs)
	}
	if !slices.Equal(got.Systems, []string{"aarch64-linux", "x86_64-linux"}) {
		t.Errorf("packages for %v", got.Systems)
	}
	src, err := os.ReadFile(filepath.Join(nixDir, "package.nix"))
	if err != nil {
		t.Fatal(err)
	}
	m := vendorHashLine.FindSubmatch(src)
	p := got.Package
	if p.Pname != "boxmaker" || p.Version != "abc1234" || p.Go != "1.26" || m == nil || p.VendorHash != string(m[1]) ||
		!slices.Equal(p.SubPackages, []string{"."}) {
		t.Errorf("packages.x86_64-linux.default: %+v", p)
	}
	if len(got.Imports) != 1 || got.Imports[0] != filepath.Join(root, "nix", "module.nix") {
		t.Errorf("nixosModules.default imports %v", got.Imports)
	}
	if got.ModulePackage != "abc1234" || got.ModulePriority != 1000 {
		t.Errorf("nixosModules.default sets services.boxmaker.package to version %q with priority %d, want the flake's package as a default",
			got.ModulePackage, got.ModulePriority)
	}
}

const flakeExpr = `
let
  nixpkgs = import @stub@;
  flake = import @root@/flake.nix;
  self = flake.outputs { inherit self nixpkgs; } // { shortRev = "abc1234"; };
  pkg = self.packages.x86_64-linux.default;
  module = self.nixosModules.default { inherit (nixpkgs) lib; pkgs = nixpkgs.legacyPackages.aarch64-linux; };
  modulePackage = module.services.boxmaker.package;
in {
  inherit (flake) description;
  inputs = builtins.attrNames flake.inputs;
  systems = builtins.attrNames self.packages;
  package = { inherit (pkg) pname version vendorHash go subPackages; };
  imports = map toString module.imports;
  modulePackage = modulePackage.content.version;
  modulePriority = modulePackage.priority;
}`
