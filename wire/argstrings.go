package wire

import "reflect"

// ArgStrings returns the string members of args, in declared order: the
// arguments a handle reference ("handle:h<N>") may stand for. Members
// inside objects (inspect's answer type) are not arguments of their own.
func ArgStrings(args ToolArgs) []string {
	if args == nil {
		return nil
	}
	v := reflect.ValueOf(args)
	var out []string
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.String {
			out = append(out, f.String())
		}
	}
	return out
}

// MapArgStrings returns a copy of args with each string member replaced by
// what f makes of it; the first error stops it.
func MapArgStrings(args ToolArgs, f func(string) (string, error)) (ToolArgs, error) {
	if args == nil {
		return nil, nil
	}
	v := reflect.New(reflect.TypeOf(args)).Elem()
	v.Set(reflect.ValueOf(args))
	for i := range v.NumField() {
		if fv := v.Field(i); fv.Kind() == reflect.String {
			s, err := f(fv.String())
			if err != nil {
				return nil, err
			}
			fv.SetString(s)
		}
	}
	return v.Interface().(ToolArgs), nil
}
