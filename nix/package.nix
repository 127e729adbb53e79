# Builds boxmaker: the one static binary every role runs from, with a symlink
# per role beside it (the binary picks its role from argv[0]), as
# `make build` does outside Nix. module.nix uses it as the default package.
#
# go.mod asks for Go 1.26; where the nixpkgs default Go is older, call this
# with `buildGoModule = pkgs.buildGo126Module`.
{
  lib,
  buildGoModule,
  version ? "dev",
}:
let
  # The role links, from the same data the NixOS module and
  # `boxmaker install --systemd` use (see units.nix).
  links = (builtins.fromJSON (builtins.readFile ./units.json)).links;
in
buildGoModule {
  pname = "boxmaker";
  inherit version;

  # The working tree's runtime state and build output are no part of the source.
  src = lib.cleanSourceWith {
    src = lib.cleanSource ../.;
    filter = path: type: !(builtins.elem (baseNameOf path) [ ".state" "bin" "result" ]);
  };

  # The NAR sha256 of the vendor directory that `go mod vendor` makes from
  # go.mod and go.sum, as buildGoModule's goModules derivation computes it.
  # `make vendor-hash` sets it with nix's own hashing, offline; `make test`
  # (TestNixVendorHash in roles/internal/units) fails while it is stale.
  vendorHash = "sha256-v9AexLXNdmcR82S3WixyLSxUxj4xrufYzfRP9p/Y3Dc=";

  subPackages = [ "." ];

  # Static, like `make build`: no cgo, paths trimmed (buildGoModule adds
  # -trimpath when allowGoReference is false, spelled out here), symbols
  # stripped, version stamped.
  env.CGO_ENABLED = 0;
  allowGoReference = false;
  ldflags = [
    "-s"
    "-w"
    "-X main.version=${version}"
  ];

  # The tests need bubblewrap, user namespaces and a real /proc, which the
  # Nix build sandbox does not give; `make test` runs them outside Nix.
  doCheck = false;

  postInstall = ''
    for role in ${lib.escapeShellArgs links}; do
      ln -s boxmaker "$out/bin/$role"
    done
  '';

  meta = {
    description = "A self-hosted agent whose every tool call is decided, sandboxed and audited";
    mainProgram = "boxmaker";
    platforms = lib.platforms.linux;
  };
}
