// Package yamlfile reads one YAML input file for decoding and keeps every position: it refuses
// what is not a regular, bounded, UTF-8 file, parses a single document (a YAML error points at
// the line that breaks it), expands ${VAR} references as a shell does while recording the
// values that are secrets, and gives the decoders typed readers (Str, Int, Duration, Template,
// Mapping with "did you mean", …) that record each problem with its file:line:col, the source
// line, a caret and a hint, instead of stopping at the first:
//
//	f, root := yamlfile.Read("scenario.yaml", os.LookupEnv)
//	if root != nil {
//		if m, ok := f.Mapping(root, "scenario", "name", "steps"); ok && m["name"] != nil {
//			fmt.Println(f.Str(m["name"], "name"))
//		}
//	}
//	fmt.Println(f.Errs) // scenario.yaml:1:1: unknown field "nmae" in scenario, the line, a caret, hint: did you mean "name"?
//
// It knows nothing of what the keys mean; package decode does.
package yamlfile
