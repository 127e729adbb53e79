# What boxmaker's NixOS module (module.nix) installs: users, groups,
# directories and one hardened unit per daemon, computed for one site.
#
# The data is units.json, which `boxmaker install --nix-data` derives from the
# role table (roles/table.go), the same data `boxmaker install --systemd` uses
# on other hosts. This file only puts the site's paths in place of the
# placeholders, drops gatewayd when there is no gateway, computes
# inferproxy's address filter, and writes each unit's credential lines for
# the secrets its role reads. It uses builtins only, so that the Go tests in
# roles/internal/units can evaluate it with nix-instantiate and compare the
# result with the installer's units.
{
  home ? "/var/lib/boxmaker",
  etc ? "/etc/boxmaker",
  bin, # the directory that holds the binary and its role links
  upstream ? null, # [infer] upstream, http://host:port
  tokenSecret ? null, # [gateway] token_secret; null: no gateway
  grantSecrets ? [ ], # every grant's secret = "name"; brokerd loads each
}:
let
  data = builtins.fromJSON (builtins.readFile ./units.json);
  gateway = tokenSecret != null;

  subst =
    v:
    if builtins.isString v then
      builtins.replaceStrings [ "@home@" "@etc@" "@bin@" "@token_secret@" ] [
        home
        etc
        bin
        (if gateway then tokenSecret else "")
      ] v
    else if builtins.isList v then
      map subst v
    else if builtins.isAttrs v then
      builtins.mapAttrs (_: subst) v
    else
      v;

  # A service whose "needs" names a config table runs only with that table.
  present = {
    "" = true;
    inherit gateway;
  };
  kept = builtins.filter (s: present.${s.needs}) data.services;
  units = map (s: s.name + ".service") kept;

  # The secrets a unit loads, as roles/internal/units/secrets.go decides:
  # gatewayd the token, brokerd every grant's secret, sorted and each once
  # as SecretsOf gives them; each with data.credential's lines.
  sortedUnique =
    l:
    builtins.foldl' (acc: n: if acc != [ ] && builtins.elemAt acc (builtins.length acc - 1) == n then acc else acc ++ [ n ]) [ ] (
      builtins.sort builtins.lessThan l
    );
  secretsOf =
    s:
    if s.secrets == "gateway" then
      (if gateway then [ tokenSecret ] else [ ])
    else if s.secrets == "grants" then
      sortedUnique grantSecrets
    else
      [ ];
  credentials =
    s:
    let
      names = secretsOf s;
    in
    if names == [ ] then
      { }
    else
      builtins.mapAttrs (_: line: map (n: builtins.replaceStrings [ "@secret@" ] [ n ] (subst line)) names) data.credential;
  onlyKept = builtins.filter (u: builtins.elem u units);

  # inferproxy's address filter, as UpstreamFilter in
  # roles/internal/units/render.go computes it: the upstream's IP literal (or
  # localhost) alone; nothing when there is no usable upstream; no filter at
  # all when the upstream is a name, since systemd filters addresses only;
  # loopback alone for the scripted model inferproxy serves itself.
  octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])";
  ipv4 = "${octet}[.]${octet}[.]${octet}[.]${octet}";
  scripted = upstream == "scripted:"; # inferproxy's own scripted model, on 127.0.0.1
  parts =
    if upstream == null || upstream == "" || scripted then
      null
    else
      builtins.match "[a-zA-Z][a-zA-Z0-9+.-]*://([^/?#@]*@)?([[]([^]/?#]*)[]]|([^]/?#:[]*))(:[0-9]*)?([/?#].*)?" upstream;
  bracketed = parts != null && builtins.elemAt parts 2 != null;
  host =
    if parts == null then
      null
    else if bracketed then
      builtins.elemAt parts 2
    else
      builtins.elemAt parts 3;
  denyAll = {
    IPAddressDeny = "any";
  };
  allowOnly = addr: {
    IPAddressAllow = addr;
    IPAddressDeny = "any";
  };
  filter =
    if scripted then
      allowOnly "localhost"
    else if host == null || host == "" then
      denyAll
    else if host == "localhost" then
      allowOnly host
    else if bracketed then
      (if builtins.match "[0-9a-fA-F:.]+" host != null then allowOnly host else denyAll)
    else if builtins.match ipv4 host != null then
      allowOnly host
    else
      { };
  warnings =
    if scripted then
      [
        "boxmaker: services.boxmaker.upstream is the scripted model: replies come from a script, not a language model; inferproxy may reach loopback only"
      ]
    else if filter == { } then
      [
        "boxmaker: upstream host ${host} is a name: systemd filters addresses, not names, so inferproxy's unit has no address filter; give services.boxmaker.upstream an IP address to get one"
      ]
    else if host == null || host == "" then
      [ "boxmaker: services.boxmaker.upstream is not a usable URL: inferproxy may reach no address" ]
    else
      [ ];

  serviceOf = s: {
    name = s.name;
    value = {
      inherit (s) description;
      requires = onlyKept s.requires;
      wants = onlyKept s.wants;
      after = onlyKept s.after;
      partOf = [ data.target ];
      serviceConfig = subst s.serviceConfig // (if s.upstreamFilter then filter else { }) // credentials s;
    };
  };
in
{
  inherit (data) binary links users groups target;
  inherit warnings;
  dirs = subst data.dirs;
  services = builtins.listToAttrs (map serviceOf kept);
  targetWants = units;
}
