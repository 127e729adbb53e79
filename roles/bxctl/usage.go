package bxctl

import "boxmaker/roles"

func usagef(format string, args ...any) error { return roles.Usagef(format, args...) }
