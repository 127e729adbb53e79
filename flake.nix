# boxmaker as a flake: the package (nix/package.nix) and the NixOS module
# (nix/module.nix), whose default package becomes this flake's. On the host:
#
#   inputs.boxmaker.url = "git+https://…/boxmaker";
#   inputs.boxmaker.inputs.nixpkgs.follows = "nixpkgs";
#   … modules = [ boxmaker.nixosModules.default { services.boxmaker = { … }; } ];
#
# roles/internal/units' TestFlakeOutputs evaluates these outputs with
# nix-instantiate against a stub nixpkgs (the tests have no network).
{
  description = "boxmaker: a self-hosted agent whose every tool call is decided, sandboxed and audited";

  # Any nixpkgs with Go 1.26 (go.mod's go line); a host normally makes this
  # follow its own nixpkgs.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs =
    { self, nixpkgs }:
    let
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      forEachSystem =
        f:
        builtins.listToAttrs (
          map (system: {
            name = system;
            value = f nixpkgs.legacyPackages.${system};
          }) systems
        );
      # Go 1.26 where this nixpkgs has it under its own name, else its
      # default Go, which must then be 1.26 or newer.
      boxmakerFor =
        pkgs:
        pkgs.callPackage ./nix/package.nix {
          buildGoModule = pkgs.buildGo126Module or pkgs.buildGoModule;
          version = self.shortRev or self.dirtyShortRev or "dev";
        };
    in
    {
      packages = forEachSystem (pkgs: {
        default = boxmakerFor pkgs;
        boxmaker = boxmakerFor pkgs;
      });

      nixosModules.default =
        { lib, pkgs, ... }:
        {
          imports = [ ./nix/module.nix ];
          services.boxmaker.package = lib.mkDefault self.packages.${pkgs.stdenv.hostPlatform.system}.default;
        };
    };
}
