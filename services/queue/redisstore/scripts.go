package redisstore

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// lib holds the helpers every per-event script shares; it is prepended to
// them, so each script's contract header is in its own .lua file.
//
//go:embed lib.lua
var lib string

var (
	//go:embed check.lua
	checkLua string
	//go:embed touch.lua
	touchLua string
	//go:embed leave.lua
	leaveLua string
	//go:embed admit.lua
	admitLua string
	//go:embed retire.lua
	retireLua string
	//go:embed cleanup.lua
	cleanupLua string
	//go:embed stats.lua
	statsLua string
	//go:embed release.lua
	releaseLua string
	//go:embed replay.lua
	replayLua string
	//go:embed logged.lua
	loggedLua string
	//go:embed relog.lua
	relogLua string
	//go:embed relisted.lua
	relistedLua string
	//go:embed lease.lua
	leaseLua string
	//go:embed beat.lua
	beatLua string
	//go:embed lines.lua
	linesLua string
)

// The scripts. Per-event scripts take the KEYS of keys.eventKeys.
var (
	// checkScript joins or refreshes a user: the whole of a check request.
	checkScript = redis.NewScript(lib + checkLua)
	// touchScript refreshes a queued user's heartbeat for status and heartbeat requests.
	touchScript = redis.NewScript(lib + touchLua)
	// leaveScript removes a user from line and active set.
	leaveScript = redis.NewScript(lib + leaveLua)
	// admitScript is one worker admission pass over one event.
	admitScript = redis.NewScript(lib + admitLua)
	// retireScript begins and rechecks dropping an event from the active-events set.
	retireScript = redis.NewScript(lib + retireLua)
	// cleanupScript drops queued users with stale heartbeats.
	cleanupScript = redis.NewScript(lib + cleanupLua)
	// statsScript reads an event's counters.
	statsScript = redis.NewScript(lib + statsLua)
	// replayScript rebuilds the served record and active set after a loss.
	replayScript = redis.NewScript(lib + replayLua)
	// loggedScript forgets served changes the durable ledger now holds.
	loggedScript = redis.NewScript(lib + loggedLua)
	// relogScript queues a page of the served record for the ledger again.
	relogScript = redis.NewScript(lib + relogLua)
	// releaseScript is compare-and-delete: it releases the admission lock.
	releaseScript = redis.NewScript(releaseLua)
	// relistedScript marks an event listed after a check's SADD.
	relistedScript = redis.NewScript(relistedLua)
	// leaseScript takes or renews a cluster-wide duty's lease.
	leaseScript = redis.NewScript(leaseLua)
	// beatScript writes one instance's batch of queued heartbeats for one event.
	beatScript = redis.NewScript(lib + beatLua)
	// linesScript reads an event's line changes and counters for the
	// instances' memory of queued users.
	linesScript = redis.NewScript(lib + linesLua)
)

// allScripts is what Load puts into the script cache.
var allScripts = []*redis.Script{checkScript, touchScript, leaveScript, admitScript, retireScript, cleanupScript, statsScript, replayScript, loggedScript, relogScript, releaseScript, relistedScript, leaseScript, beatScript, linesScript}
