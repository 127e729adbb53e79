// Package environ names the environment variables boxmaker's daemons are
// given beside PATH: names only, so that the role table (roles/table.go)
// can say which daemon gets which without importing the configuration
// that reads them (roles/internal/config).
//
// environ must never read the environment itself, hold a value, or import
// another boxmaker package.
package environ

const (
	// Upstream overrides [infer] upstream; up sets it for inferproxy.
	Upstream = "BOXMAKER_UPSTREAM"
	// ModelScript holds the scripted model's script (boxmaker up
	// --model-script), for inferproxy when its upstream is scripted.
	ModelScript = "BOXMAKER_MODEL_SCRIPT"
	// Credentials names the directory of a role's copies of its secrets,
	// as systemd's LoadCredential= sets it and up as root does likewise.
	Credentials = "CREDENTIALS_DIRECTORY"
)
