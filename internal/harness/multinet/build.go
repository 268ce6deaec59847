package multinet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// PluginPackage is the import path of the plugin's main package.
const PluginPackage = "github.com/sllbrd/sllbrd/internal/harness/multinet/cmd/multinet"

// BuildPlugin builds the static plugin binary (CGO_ENABLED=0) at out with
// `go build`, in this module's source tree, so that the node can install it
// as TypeName in the runtime's CNI bin dir.
func BuildPlugin(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, PluginPackage)
	if _, file, _, ok := runtime.Caller(0); ok {
		if _, err := os.Stat(file); err == nil {
			cmd.Dir = filepath.Dir(file) // inside the module, wherever the caller runs
		}
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w: %s", PluginPackage, err, msg)
	}
	return nil
}
