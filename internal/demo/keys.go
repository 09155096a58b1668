package demo

// Every Redis key of the demo site. One event's keys share the hash tag {E},
// so each script touches a single Redis Cluster slot.

func holdsKey(event string) string      { return "seat:holds:{" + event + "}" }
func remainingKey(event string) string  { return "seat:remaining:{" + event + "}" }
func holdKey(event, seat string) string { return "seat:hold:{" + event + "}:" + seat }
