// Package openapigen writes large, valid OpenAPI 3.0 JSON documents of a chosen size, shaped
// like real ones: per resource a schema in components (properties with descriptions, enums,
// a nested object, an array of the previous resource), a collection path with a POST that
// declares an idempotency key, and an item path with GET, PUT and DELETE; every operation has
// 200, 400 and 500 responses with descriptions and examples. It measures what loading a
// document costs (bench/openapigen, the memory test of internal/openapi).
package openapigen

import (
	"bytes"
	"fmt"
	"strings"
)

// Generate returns a document of at least size bytes (a resource more at most: about 12 KB).
func Generate(size int) []byte { return generate(size, true) }

// GenerateBodies is Generate without responses: a document made only of what idemtest maps
// (operations, parameters, request body schemas), the least a loader can drop.
func GenerateBodies(size int) []byte { return generate(size, false) }

func generate(size int, withResponses bool) []byte {
	var paths, schemas bytes.Buffer
	text := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 3)
	for i := 0; paths.Len()+schemas.Len() < size; i++ {
		if i > 0 {
			paths.WriteByte(',')
			schemas.WriteByte(',')
		}
		prev := i - 1
		if prev < 0 {
			prev = 0
		}
		fmt.Fprintf(&schemas, `"Res%d":{"type":"object","description":"Resource %d. %s","required":["name","kind"],"properties":{`+
			`"id":{"type":"string","format":"uuid","readOnly":true,"description":"%s"},`+
			`"name":{"type":"string","maxLength":200,"example":"name %d","description":"%s"},`+
			`"kind":{"type":"string","enum":["a","b","c","d"],"description":"%s"},`+
			`"count":{"type":"integer","minimum":0,"maximum":1000,"default":1},`+
			`"meta":{"type":"object","properties":{"created":{"type":"string","format":"date-time"},"tags":{"type":"array","items":{"type":"string"}}}},`+
			`"related":{"type":"array","items":{"$ref":"#/components/schemas/Res%d"}}}}`,
			i, i, text, text, i, text, text, prev)
		resp := func(code, desc string) string {
			return fmt.Sprintf(`"%s":{"description":"%s %s","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Res%d"},"examples":{"one":{"summary":"%s","value":{"id":"00000000-0000-0000-0000-%012d","name":"%s","kind":"a","count":3,"meta":{"tags":["x","y"]}}}}}}}`,
				code, desc, text, i, text, i, text)
		}
		responses := `"responses":{` + resp("200", "OK") + `,` + resp("400", "Bad request") + `,` + resp("500", "Server error") + `}`
		if !withResponses {
			responses = `"deprecated":false`
		}
		body := fmt.Sprintf(`"requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Res%d"}}}}`, i)
		fmt.Fprintf(&paths, `"/res%d":{"post":{"operationId":"createRes%d","summary":"Create resource %d","description":"%s",`+
			`"parameters":[{"name":"Idempotency-Key","in":"header","schema":{"type":"string"}},{"name":"dry_run","in":"query","schema":{"type":"boolean"}}],%s,%s}},`,
			i, i, i, text, body, responses)
		fmt.Fprintf(&paths, `"/res%d/{id}":{"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],`+
			`"get":{"operationId":"getRes%d","summary":"Get resource %d",%s},`+
			`"put":{"operationId":"replaceRes%d","summary":"Replace resource %d",%s,%s},`+
			`"delete":{"operationId":"deleteRes%d","summary":"Delete resource %d",%s}}`,
			i, i, i, responses, i, i, body, responses, i, i, responses)
	}
	var doc bytes.Buffer
	doc.WriteString(`{"openapi":"3.0.3","info":{"title":"generated","version":"1"},"servers":[{"url":"http://127.0.0.1:9000"}],"paths":{`)
	doc.Write(paths.Bytes())
	doc.WriteString(`},"components":{"schemas":{`)
	doc.Write(schemas.Bytes())
	doc.WriteString("}}}\n")
	return doc.Bytes()
}

// Operations is how many operations a document of Generate has: four per resource.
func Operations(doc []byte) int {
	return 4 * bytes.Count(doc, []byte(`"/res`)) / 2
}
