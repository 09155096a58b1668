// Command infra is the vwr CDK app: `cdk synth` and `cdk deploy` run it
// (cdk.json: `go run .`). Wiring only: the stacks live in stacks.go and the
// files named after them; settings come from the CDK context (config.go).
package main

import (
	"log"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	cfg, err := ConfigFromContext(app)
	if err != nil {
		log.Fatal(err)
	}
	NewVWR(app, cfg)
	app.Synth(nil)
}
