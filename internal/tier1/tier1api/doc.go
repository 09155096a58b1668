// Package tier1api is Tier 1's front: the JSON routes (assign, check,
// status, admin) as plain net/http handlers on Go 1.22 ServeMux patterns, and
// the advancer run by the EventBridge schedule. It turns requests into
// tier1.Service calls and maps the domain's errors to HTTP status in one
// place (errors.go); how errors, bodies and Retry-After are written is
// internal/jsonhttp's, shared with Tier 2.
//
// The package knows nothing of Lambda or of the stores: each lambdas/<fn>
// wraps the handler for its route with aws-lambda-go-api-proxy's adapter,
// `vwr local` serves the same handlers on its own port, and
// internal/tier1/tier1app chooses the store and builds the Service.
package tier1api
