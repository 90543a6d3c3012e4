// Package load turns scenario paths into validated scenarios: it finds the scenario files under
// the paths given, finds each one's idemtest.yaml (or takes --config), decodes each config once
// and each scenario on top of its config, and checks what needs the whole scenario (step ids,
// retry_of and endpoint references, the outbound host policy). Every problem in every file is
// returned together, sorted and with secrets hidden, as yamlfile.Errors; a scenario that loads
// is one that can run:
//
//	list, err := load.Scenarios(ctx, []string{"examples/scenarios"}, load.Options{})
//	var errs yamlfile.Errors
//	if errors.As(err, &errs) {
//		fmt.Println(errs) // file:line:col: message, the line, a caret and a hint, for each
//	}
package load
