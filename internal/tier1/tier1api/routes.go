package tier1api

// Public route paths (API Gateway syntax).
const (
	AssignPath = "/vwr/assign/{eventId}"
	CheckPath  = "/vwr/check/{eventId}/{requestId}"
	StatusPath = "/vwr/status/{eventId}"
)

// Handlers is the set of Tier 1 HTTP API handlers, one per Lambda function.
type Handlers struct {
	Assign *Assign
	Check  *Check
	Status *Status
	Admin  *Admin
}

// NewHandlers builds every HTTP handler over the same dependencies.
func NewHandlers(d Deps, admin AdminOptions) Handlers {
	return Handlers{Assign: NewAssign(d), Check: NewCheck(d), Status: NewStatus(d), Admin: NewAdmin(d, admin)}
}

// Routes lists every HTTP API route and its handler: the same table
// template.yaml declares, and the one vwr local serves.
func (h Handlers) Routes() []Route {
	return []Route{
		{"POST", AssignPath, h.Assign},
		{"GET", CheckPath, h.Check},
		{"GET", StatusPath, h.Status},
		{"POST", AdminActivatePath, h.Admin},
		{"POST", AdminDeactivatePath, h.Admin},
		{"POST", AdminPausePath, h.Admin},
		{"POST", AdminResumePath, h.Admin},
		{"GET", AdminStatusPath, h.Admin},
		{"POST", AdminAdvancePath, h.Admin},
	}
}
