package multinet

import (
	"fmt"
	"strings"
)

// CNI commands multinet answers.
const (
	cmdAdd     = "ADD"
	cmdDel     = "DEL"
	cmdCheck   = "CHECK"
	cmdVersion = "VERSION"
)

// cniEnv is a command's CNI environment: the CNI_* variables, the pod named
// in CNI_ARGS, and the rest of the environment (passed on to delegates).
type cniEnv struct {
	Command     string
	ContainerID string
	Netns       string
	IfName      string
	Args        string
	Path        string
	// PodNamespace, PodName and PodUID are CNI_ARGS' K8S_POD_NAMESPACE,
	// K8S_POD_NAME and K8S_POD_UID.
	PodNamespace, PodName, PodUID string
	// other is the environment without the CNI_* variables.
	other []string
}

// parseEnv reads and validates the CNI variables of environ (KEY=VALUE
// strings). What a command needs is checked by needPod and the commands.
func parseEnv(environ []string) (cniEnv, error) {
	var e cniEnv
	vars := map[string]*string{
		"CNI_COMMAND": &e.Command, "CNI_CONTAINERID": &e.ContainerID, "CNI_NETNS": &e.Netns,
		"CNI_IFNAME": &e.IfName, "CNI_ARGS": &e.Args, "CNI_PATH": &e.Path,
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if p, ok := vars[k]; ok {
			*p = v
			continue
		}
		e.other = append(e.other, kv)
	}
	switch e.Command {
	case cmdVersion:
		return e, nil
	case cmdAdd, cmdDel, cmdCheck:
	case "":
		return e, codef(CodeInvalidEnvironment, "CNI_COMMAND is not set")
	default:
		return e, codef(CodeInvalidEnvironment, "CNI_COMMAND %q: want ADD, DEL, CHECK or VERSION", e.Command)
	}
	if err := checkCNIName("CNI_CONTAINERID", e.ContainerID); err != nil {
		return e, withCode(CodeInvalidEnvironment, err)
	}
	if err := checkIfName(e.IfName); err != nil {
		return e, withCode(CodeInvalidEnvironment, fmt.Errorf("CNI_IFNAME: %w", err))
	}
	if e.Path == "" {
		return e, codef(CodeInvalidEnvironment, "CNI_PATH is not set")
	}
	if e.Netns == "" && e.Command != cmdDel {
		return e, codef(CodeInvalidEnvironment, "CNI_NETNS is not set")
	}
	if err := e.parseArgs(); err != nil {
		return e, withCode(CodeInvalidEnvironment, err)
	}
	return e, nil
}

// parseArgs reads the pod of CNI_ARGS ("K=V;K=V"), validating what is set.
func (e *cniEnv) parseArgs() error {
	if e.Args == "" {
		return nil
	}
	for _, kv := range strings.Split(e.Args, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("CNI_ARGS: %q is not KEY=VALUE", kv)
		}
		switch k {
		case "K8S_POD_NAMESPACE":
			e.PodNamespace = v
		case "K8S_POD_NAME":
			e.PodName = v
		case "K8S_POD_UID":
			e.PodUID = v
		}
	}
	if e.PodNamespace != "" {
		if err := checkNamespace(e.PodNamespace); err != nil {
			return fmt.Errorf("CNI_ARGS K8S_POD_NAMESPACE: %w", err)
		}
	}
	if e.PodName != "" {
		if err := checkObjectName("pod", e.PodName); err != nil {
			return fmt.Errorf("CNI_ARGS K8S_POD_NAME: %w", err)
		}
	}
	return nil
}

// needPod returns an error unless CNI_ARGS names the pod (ADD needs it).
func (e cniEnv) needPod() error {
	if e.PodNamespace == "" || e.PodName == "" {
		return codef(CodeInvalidEnvironment, "CNI_ARGS %q lacks K8S_POD_NAMESPACE or K8S_POD_NAME", e.Args)
	}
	return nil
}

// pod is namespace/name for logs and errors ("" when CNI_ARGS has none).
func (e cniEnv) pod() string {
	if e.PodName == "" {
		return ""
	}
	return e.PodNamespace + "/" + e.PodName
}

// delegateEnv is the environment of a delegated plugin: the same CNI
// variables and environment, with command and ifname.
func (e cniEnv) delegateEnv(command, ifname string) []string {
	return append(append([]string(nil), e.other...),
		"CNI_COMMAND="+command, "CNI_CONTAINERID="+e.ContainerID, "CNI_NETNS="+e.Netns,
		"CNI_IFNAME="+ifname, "CNI_ARGS="+e.Args, "CNI_PATH="+e.Path)
}
