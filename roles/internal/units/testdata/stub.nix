# The few functions of nixpkgs' lib and pkgs that module.nix and package.nix
# call, enough to evaluate them without nixpkgs (the tests have no network).
# Option declarations evaluate to nothing; mkIf keeps its content.
let
  type = { };
in
{
  lib = {
    mkEnableOption = _: { };
    mkOption = _: { };
    literalExpression = s: s;
    mkDefault = content: {
      _type = "override";
      priority = 1000;
      inherit content;
    };
    types = {
      package = type;
      str = type;
      lines = type;
      path = type;
      nullOr = _: type;
      submodule = _: type;
      listOf = _: type;
      attrsOf = _: type;
      either = _: _: type;
    };
    mkIf = condition: content: {
      _type = "if";
      inherit condition content;
    };
    hasPrefix = p: s: builtins.substring 0 (builtins.stringLength p) s == p;
    findFirst =
      pred: default: l:
      let
        m = builtins.filter pred l;
      in
      if m == [ ] then default else builtins.head m;
    nameValuePair = name: value: { inherit name value; };
    listToAttrs = builtins.listToAttrs;
    mapAttrs = builtins.mapAttrs;
    mapAttrs' = f: s: builtins.listToAttrs (map (n: f n s.${n}) (builtins.attrNames s));
    optionalAttrs = c: s: if c then s else { };
    recursiveUpdate =
      let
        merge =
          a: b:
          a
          // builtins.mapAttrs (
            n: v: if builtins.isAttrs v && builtins.isAttrs (a.${n} or null) then merge a.${n} v else v
          ) b;
      in
      merge;
    cleanSource = s: s;
    cleanSourceWith = a: a.src;
    fakeHash = "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    escapeShellArgs = l: builtins.concatStringsSep " " (map (a: "'${a}'") l);
    platforms.linux = [ "x86_64-linux" ];
  };
  pkgs = {
    # generate keeps the value, so that the tests can read the config it would write.
    formats.toml = _: {
      type = type;
      generate = name: value: {
        outPath = "/nix/store/stub-${name}";
        inherit value;
      };
    };
    callPackage = _: _: "/nix/store/stub-boxmaker";
    bubblewrap = "/nix/store/stub-bubblewrap";
    buildEnv = a: "/nix/store/stub-${a.name}";
  };
  buildGoModule = attrs: attrs;
}
