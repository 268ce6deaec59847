package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/admin"
)

// `sllbrd show`, `sllbrd explain` and `sllbrd log-level` are clients of a
// running sllbrd's admin socket (internal/admin): they need no shell, so
// `kubectl exec POD -- /sllbrd show services` works in the image.

func showMain(args []string) int { return clientMain(admin.CommandShow, args, os.Stdout, os.Stderr) }
func explainMain(args []string) int {
	return clientMain(admin.CommandExplain, args, os.Stdout, os.Stderr)
}
func logLevelMain(args []string) int {
	return clientMain(admin.CommandLogLevel, args, os.Stdout, os.Stderr)
}

// clientUsage is each command's synopsis.
var clientUsage = map[string]string{
	admin.CommandShow:     "sllbrd show [flags] " + strings.Join(admin.Topics, "|"),
	admin.CommandExplain:  "sllbrd explain [flags] " + strings.Join(admin.Protocols, "|") + " <source>[:port] <destination>[:port]",
	admin.CommandLogLevel: "sllbrd log-level [flags] [debug|info|warn|error]",
}

// clientMain runs one client command and returns the exit code: 0 done,
// 1 sllbrd could not be asked or answered an error, 2 bad usage.
func clientMain(command string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sllbrd "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("admin-socket", envOr(envAdminSocket, admin.DefaultSocket), "sllbrd's admin socket; default $"+envAdminSocket+" or "+admin.DefaultSocket)
	output := fs.String("o", "text", "output format: text (aligned columns) or json (stable field names, docs/operations.md)")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	payload := new(string)
	if command == admin.CommandExplain {
		payload = fs.String("payload", "", "bytes after the transport header, in hexadecimal (byte matches may read them)")
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n", clientUsage[command])
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && *output != "text" && *output != "json" {
		err = fmt.Errorf("-o %q: want text or json", *output)
	}
	var req admin.Request
	var result admin.Text
	if err == nil {
		req, result, err = clientRequest(command, pos, *payload)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sllbrd %s: %v\nusage: %s\n", command, err, clientUsage[command])
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := admin.Call(ctx, *socket, req, result); err != nil {
		fmt.Fprintf(stderr, "sllbrd %s: %v\n", command, err)
		return 1
	}
	if err := writeResult(stdout, result, *output); err != nil {
		fmt.Fprintf(stderr, "sllbrd %s: %v\n", command, err)
		return 1
	}
	return 0
}

// parseInterspersed parses flags before, between and after the positional
// arguments (`sllbrd show routes -o json`), which flag.Parse alone stops at.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// clientRequest builds the request of a command and the value its result
// decodes into.
func clientRequest(command string, pos []string, payload string) (admin.Request, admin.Text, error) {
	req := admin.Request{Command: command}
	switch command {
	case admin.CommandShow:
		if len(pos) != 1 || !slices.Contains(admin.Topics, pos[0]) {
			return req, nil, fmt.Errorf("want one of %s", strings.Join(admin.Topics, ", "))
		}
		req.Topic = pos[0]
		return req, showResult(pos[0]), nil
	case admin.CommandExplain:
		f, err := admin.ParseFlow(pos)
		if err != nil {
			return req, nil, err
		}
		if f.Payload, err = hex.DecodeString(payload); err != nil {
			return req, nil, fmt.Errorf("--payload: not hexadecimal: %w", err)
		}
		if err := f.Validate(); err != nil {
			return req, nil, err
		}
		req.Flow = &f
		return req, &admin.Explanation{}, nil
	default: // log-level
		if len(pos) > 1 {
			return req, nil, errors.New("want at most one level")
		}
		if len(pos) == 1 {
			if _, err := admin.ParseLevel(pos[0]); err != nil {
				return req, nil, err
			}
			req.Level = pos[0]
		}
		return req, &admin.LogLevel{}, nil
	}
}

func showResult(topic string) admin.Text {
	switch topic {
	case admin.TopicRoutes:
		return &admin.Routes{}
	case admin.TopicServices:
		return &admin.Services{}
	case admin.TopicEndpoints:
		return &admin.Endpoints{}
	case admin.TopicSessions:
		return &admin.Sessions{}
	case admin.TopicFragments:
		return &admin.Fragments{}
	default:
		return &admin.Config{}
	}
}

func writeResult(w io.Writer, result admin.Text, output string) error {
	if output == "text" {
		return result.WriteText(w)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(result)
}
