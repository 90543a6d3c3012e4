// Package toolset builds the endpoints a run calls from their scenario definitions: it renders
// their templates in the scenario's environment, checks the hosts they name against what they
// may reach, configures MCP servers, reads OpenAPI documents and maps their operations to
// tools. A Set builds each endpoint once per definition, template environment and allowed
// hosts, keeps the standard error of each stdio MCP server, and closes them all at the end.
//
// It is also the one place that decides what idemtest makes of a tool: Mutating (it gets a key
// and is judged), Natural (idempotent by nature, its answers are no evidence) and Describe, the
// ToolInfo that tools, init and check show.
//
//	eps := toolset.New(ctx, services.TemplateEnv)
//	defer eps.Close()
//	ep, def, err := eps.Get(sc, "refunds")
package toolset
