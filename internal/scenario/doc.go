// Package scenario loads idemtest's YAML scenarios and configs into a typed, validated model.
//
// Both step forms (the native call_tool/assert/sleep keys and the hosted-runner action/tool/check
// form) decode into the same Step. Every error in every file is collected with its file:line:col
// and a hint, and expressions are compiled at load time, so a scenario that loads is one that
// can run:
//
//	list, err := scenario.Load([]string{"examples/scenarios"}, scenario.Options{})
//	var errs scenario.Errors
//	if errors.As(err, &errs) {
//		fmt.Println(errs) // file:line:col: message, the line, a caret and a hint, for each
//	}
package scenario
