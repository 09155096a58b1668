// Command vwr is the project's CLI. `vwr local` runs the whole stack in one
// process for development; further subcommands (loadtest, admin) register
// themselves in their own files. main only wires signals to the dispatcher.
package main

import (
	"github.com/vwr-go/vwr/internal/envconf"

	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, invocation{Args: os.Args[1:], Stdout: os.Stdout, Stderr: os.Stderr, Env: envconf.Environ()})
	stop()
	os.Exit(code)
}
