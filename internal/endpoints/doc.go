// Package endpoints builds the endpoints a run calls from their scenario definitions: it renders
// their templates in the scenario's environment, checks the hosts they name against what they
// may reach, configures MCP servers, reads OpenAPI documents and maps their operations to
// tools. A Set builds each endpoint once per definition, template environment and allowed
// hosts, keeps the standard error of each stdio MCP server, and closes them all at the end.
//
//	eps := endpoints.New(services.TemplateEnv)
//	defer eps.Close()
//	ep, def, err := eps.Get(sc, "refunds")
package endpoints
