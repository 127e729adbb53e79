# The NixOS module for boxmaker. services.boxmaker creates the role users and
# the per-pair groups, the directories of the runtime layout with their owners
# and modes, the role symlinks (in the package, on the system path), one
# hardened systemd unit per daemon under boxmaker.target, and
# /etc/boxmaker/config.toml with the grants. Everything but config.toml and
# the grants comes from units.nix, which reads the data that
# `boxmaker install --systemd` uses on other hosts, so the two cannot differ.
# Secrets are never put in the Nix store: the owner places them in
# /etc/boxmaker/secrets, which is root's alone, and each unit loads only its
# own role's with LoadCredential: gatewayd the gateway's token_secret, brokerd
# every grant's secret (see docs/deploy.md).
{
  config,
  lib,
  pkgs,
  ...
}:
let
  cfg = config.services.boxmaker;
  etc = "/etc/boxmaker";
  site = import ./units.nix {
    inherit (cfg) home upstream;
    inherit etc grantSecrets;
    bin = "${cfg.package}/bin";
    tokenSecret = if cfg.gateway == null then null else cfg.gateway.token_secret;
  };

  # A grant is its TOML text or a file, which is read here to learn the
  # secret it names: brokerd's unit loads every one (install reads the
  # installed grants the same way).
  isFile = grant: builtins.isPath grant || lib.hasPrefix "/" grant;
  grantSecrets = builtins.concatMap (
    grant:
    let
      secret = (builtins.fromTOML (if isFile grant then builtins.readFile grant else grant)).secret or null;
    in
    if secret == null then [ ] else [ secret ]
  ) (builtins.attrValues cfg.grants);

  toml = pkgs.formats.toml { };

  # What the shell tool's commands find on their PATH.
  shellTools = pkgs.buildEnv {
    name = "boxmaker-shell-tools";
    paths = cfg.shellPackages;
  };
  configFile = toml.generate "boxmaker-config.toml" (
    lib.recursiveUpdate
      (lib.recursiveUpdate {
        sandbox = {
          # NixOS keeps /bin/sh and every command in the store, and little in
          # /usr and /bin: the shell tool's sandbox gets the store read-only
          # (bwrap and Landlock alike) and its commands the shellPackages.
          # settings.sandbox may say otherwise.
          system_paths = [ "/nix/store" ];
          shell_path = "${shellTools}/bin:/usr/bin:/bin";
        };
      } cfg.settings)
      (
        {
          infer.upstream = cfg.upstream;
          # bubblewrap is not at the default /usr/bin/bwrap on NixOS.
          sandbox.bwrap = "${pkgs.bubblewrap}/bin/bwrap";
        }
        // lib.optionalAttrs (cfg.gateway != null) { gateway = cfg.gateway; }
      )
  );

  # Jobs are kept as grants are: root's, readable by brokerd's group alone.
  jobEntry =
    id: job:
    lib.nameValuePair "boxmaker/jobs/${id}.toml" (
      {
        mode = "0640";
        user = "root";
        group = brokerGroup;
      }
      // (if isFile job then { source = job; } else { text = job; })
    );

  # Grants are root's and readable by brokerd's group alone, as on other hosts.
  brokerGroup = (lib.findFirst (u: u.role == "brokerd") null site.users).name;
  grantEntry =
    id: grant:
    lib.nameValuePair "boxmaker/grants/${id}.toml" (
      {
        mode = "0640";
        user = "root";
        group = brokerGroup;
      }
      # types.path also takes a string that starts with "/", which no TOML text does.
      // (if isFile grant then { source = grant; } else { text = grant; })
    );

  # "f" creates a missing file (memory/core.md); both set owner and mode.
  tmpfilesRule = d: "${if d.file or false then "f" else "d"} ${d.path} ${d.mode} ${d.owner} ${d.group} -";

  gatewayOptions = {
    options = {
      url = lib.mkOption {
        type = lib.types.str;
        example = "https://mattermost.example";
        description = "The Mattermost server; http:// only for a loopback host.";
      };
      token_secret = lib.mkOption {
        type = lib.types.str;
        default = "mattermost-bot";
        description = "File name in /etc/boxmaker/secrets holding the bot token; gatewayd's unit, and no other unless a grant names it too, loads it with LoadCredential.";
      };
      channels = lib.mkOption {
        type = lib.types.listOf lib.types.str;
        default = [ ];
        description = "Channel ids gatewayd listens in; direct messages to the bot always count.";
      };
      allow_users = lib.mkOption {
        type = lib.types.listOf lib.types.str;
        description = "User ids who may talk to the bot and answer approvals; the first is the owner.";
      };
      approve_emoji = lib.mkOption {
        type = lib.types.str;
        default = "+1";
        description = "The reaction that approves a pending tool call.";
      };
      deny_emoji = lib.mkOption {
        type = lib.types.str;
        default = "-1";
        description = "The reaction that refuses it.";
      };
    };
  };
in
{
  options.services.boxmaker = {
    enable = lib.mkEnableOption "boxmaker, a self-hosted agent whose every tool call is decided, sandboxed and audited";

    package = lib.mkOption {
      type = lib.types.package;
      default = pkgs.callPackage ./package.nix { };
      defaultText = lib.literalExpression "pkgs.callPackage ./package.nix { }";
      description = "The boxmaker package; its bin/ must hold the role links (package.nix makes them).";
    };

    home = lib.mkOption {
      type = lib.types.str;
      default = "/var/lib/boxmaker";
      description = "boxmaker's home: sessions, memory, audit log, broker state and the sockets.";
    };

    upstream = lib.mkOption {
      type = lib.types.str;
      example = "http://127.0.0.1:8080";
      description = ''
        The llama-server, [infer] upstream. inferproxy's unit may reach this
        address alone when it is an IP literal or localhost; a host name gets no
        address filter (systemd filters addresses, not names) and a warning.
      '';
    };

    gateway = lib.mkOption {
      type = lib.types.nullOr (lib.types.submodule gatewayOptions);
      default = null;
      description = "The Mattermost bot ([gateway]); gatewayd runs only when this is set.";
    };

    grants = lib.mkOption {
      type = lib.types.attrsOf (lib.types.either lib.types.path lib.types.lines);
      default = { };
      example = lib.literalExpression ''{ fetch-docs = ./grants/fetch-docs.toml; notes-read = "tool = \"notes_read\"\n..."; }'';
      description = ''
        Grants by id: TOML text or a file, installed as /etc/boxmaker/grants/<id>.toml.
        Each is read at evaluation: the secret it names is loaded into brokerd's unit.
      '';
    };

    jobs = lib.mkOption {
      type = lib.types.attrsOf (lib.types.either lib.types.path lib.types.lines);
      default = { };
      example = lib.literalExpression ''{ morning-news = "every = \"24h\"\nprompt = \"fetch the weather\"\ndeliver = \"log\"\n"; }'';
      description = ''
        Scheduled jobs by id (DESIGN.md section 13): TOML text or a file, installed as
        /etc/boxmaker/jobs/<id>.toml beside the grants, root's and readable by brokerd's group.
      '';
    };

    shellPackages = lib.mkOption {
      type = lib.types.listOf lib.types.package;
      default = with pkgs; [
        bashInteractive
        coreutils
        findutils
        gnugrep
        gnused
        gawk
        diffutils
        gnutar
        gzip
        less
      ];
      defaultText = lib.literalExpression "with pkgs; [ bashInteractive coreutils findutils gnugrep gnused gawk diffutils gnutar gzip less ]";
      description = ''
        The commands the shell tool finds on its PATH ([sandbox] shell_path). NixOS has
        almost nothing in /usr and /bin, so the sandbox gets /nix/store read-only
        ([sandbox] system_paths) and these packages' bin/ first on the PATH.
      '';
    };

    settings = lib.mkOption {
      type = toml.type;
      default = { };
      description = "Further config.toml tables ([broker], [sandbox], [egress], [consult], [loop]); see docs/configuration.md.";
    };
  };

  config = lib.mkIf cfg.enable {
    inherit (site) warnings;
    assertions = [
      {
        assertion = lib.hasPrefix "/" cfg.home;
        message = "services.boxmaker.home must be an absolute path";
      }
    ]
    # As CheckSecretName in roles/internal/units/secrets.go: a name goes into unit lines as it is.
    ++ map (name: {
      assertion = builtins.match "[A-Za-z0-9][A-Za-z0-9._-]{0,127}" name != null;
      message = "boxmaker: secret name ${builtins.toJSON name} (gateway.token_secret or a grant's secret) must be a plain file name";
    }) (grantSecrets ++ (if cfg.gateway == null then [ ] else [ cfg.gateway.token_secret ]));

    environment.systemPackages = [ cfg.package ];

    users.users = lib.listToAttrs (
      map (
        u:
        lib.nameValuePair u.name {
          isSystemUser = true;
          group = u.name;
          extraGroups = u.groups;
          description = "boxmaker ${u.role}";
        }
      ) site.users
    );
    users.groups = lib.listToAttrs (
      map (u: lib.nameValuePair u.name { }) site.users ++ map (g: lib.nameValuePair g.name { }) site.groups
    );

    environment.etc = {
      "boxmaker/config.toml".source = configFile;
    } // lib.mapAttrs' grantEntry cfg.grants // lib.mapAttrs' jobEntry cfg.jobs;

    systemd.tmpfiles.rules = map tmpfilesRule site.dirs;

    systemd.services = lib.mapAttrs (_: s: s // { restartTriggers = [ configFile ]; }) site.services;

    systemd.targets.boxmaker = {
      description = "boxmaker: every daemon";
      wants = site.targetWants;
      wantedBy = [ "multi-user.target" ];
    };
  };
}
