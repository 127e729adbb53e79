# A stub of the nixpkgs flake input, enough for flake.nix's outputs: lib
# and legacyPackages from stub.nix, with a callPackage that really calls
# and a buildGoModule that marks which Go it stands for.
let
  stub = import ./stub.nix;
  pkgsFor = system: stub.pkgs // {
    stdenv.hostPlatform.system = system;
    buildGoModule = attrs: attrs // { go = "default"; };
    buildGo126Module = attrs: attrs // { go = "1.26"; };
    callPackage = f: args: import f ({ inherit (stub) lib; buildGoModule = stub.buildGoModule; } // args);
  };
in
{
  inherit (stub) lib;
  legacyPackages = builtins.listToAttrs (
    map (system: {
      name = system;
      value = pkgsFor system;
    }) [ "x86_64-linux" "aarch64-linux" ]
  );
}
