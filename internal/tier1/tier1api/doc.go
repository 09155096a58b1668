// Package tier1api is Tier 1's API Gateway HTTP API (payload v2) and
// EventBridge front: one handler type per Lambda function (assign, check,
// status, admin, advancer) that turns a typed aws-lambda-go event into a
// tier1.Service call and the answer back into an event response.
//
// The handlers live here rather than in lambdas/<fn> because two programs run
// them: each lambdas/<fn>/main.go (wiring only: config, clients built once at
// cold start, lambda.Start) and `vwr local`, which serves the very same
// handlers over net/http through NewHTTPHandler. A package main cannot be
// imported, so the shared code must sit in an ordinary package.
//
// Client errors come back as a response with a nil error (status and JSON
// {"error","code"} decided in statusFor, the one mapping); a Lambda error is
// returned only where AWS retrying helps (the scheduled advancer).
package tier1api
