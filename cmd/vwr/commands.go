package main

import (
	"context"
	"fmt"
	"io"
	"sort"
)

// command is one `vwr <name>` subcommand. Files add theirs with register in
// an init function; run returns the process exit code.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, inv invocation) int
}

// invocation is what a command runs with. Commands read the environment only
// through Env, so tests can run them in parallel with their own.
type invocation struct {
	Args   []string
	Stdout io.Writer
	Stderr io.Writer
	Env    map[string]string
}

// getenv reads one variable of the invocation's environment.
func (inv invocation) getenv(k string) string { return inv.Env[k] }

var commands = map[string]*command{}

// register adds c; a duplicate name is a wiring bug.
func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("vwr: command " + c.name + " registered twice")
	}
	commands[c.name] = c
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// dispatch runs the command named by inv.Args[0] with the rest of the args.
func dispatch(ctx context.Context, inv invocation) int {
	if len(inv.Args) == 0 {
		usage(inv.Stderr)
		return exitUsage
	}
	switch inv.Args[0] {
	case "help", "-h", "-help", "--help":
		usage(inv.Stdout)
		return exitOK
	}
	c, ok := commands[inv.Args[0]]
	if !ok {
		fmt.Fprintf(inv.Stderr, "vwr: unknown command %q\n\n", inv.Args[0])
		usage(inv.Stderr)
		return exitUsage
	}
	inv.Args = inv.Args[1:]
	if inv.Env == nil {
		inv.Env = map[string]string{} // never the process's by accident
	}
	return c.run(ctx, inv)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: vwr <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun `vwr <command> -h` for a command's flags.")
}
