// Command echo is the harness's own test function: it echoes its event, counts
// invocations (to prove the process is reused) and can fail on demand.
package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
)

type event struct {
	Say   string `json:"say"`
	Fail  bool   `json:"fail"`
	Panic bool   `json:"panic"`
}

type reply struct {
	Say         string `json:"say"`
	Count       int    `json:"count"`
	Greeting    string `json:"greeting"`
	InheritsEnv bool   `json:"inheritsEnv"`
	HasDeadline bool   `json:"hasDeadline"`
}

func main() {
	if msg := os.Getenv("ECHO_INIT_FAIL"); msg != "" {
		// What a custom runtime does when its wiring fails: report, then exit.
		url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/init/error"
		body := `{"errorMessage":"` + msg + `","errorType":"Runtime.ConfigError"}`
		if resp, err := http.Post(url, "application/json", strings.NewReader(body)); err == nil {
			resp.Body.Close()
		}
		os.Exit(1)
	}
	count := 0
	lambda.Start(func(ctx context.Context, e event) (reply, error) {
		count++
		if e.Panic {
			panic("asked to panic")
		}
		if e.Fail {
			return reply{}, errors.New("asked to fail")
		}
		_, deadline := ctx.Deadline()
		return reply{
			Say:         e.Say,
			Count:       count,
			Greeting:    os.Getenv("ECHO_GREETING"),
			InheritsEnv: os.Getenv("LAMBDATEST_PARENT_ONLY") != "",
			HasDeadline: deadline,
		}, nil
	})
}
