package buildinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
)

// Machine describes the computer a result's wall-clock times were taken
// on: a run's wall_s means little without it (the same build ran the same
// simulation at 20x and at 50x real time on two virtual machines of one
// kind). Nothing in it changes a simulated result.
type Machine struct {
	// CPU is the processor's model name with its family, model and
	// stepping where the system gives them ("AMD EPYC (family 26 model 2
	// stepping 1)": virtual machines often give only a short name); ""
	// when unknown.
	CPU string `json:"cpu,omitempty"`
	// CPUs is the number of logical CPUs the process may use.
	CPUs int `json:"cpus"`
	// Virtualized reports a hypervisor (the CPU's hypervisor flag).
	Virtualized bool `json:"virtualized,omitempty"`
	// Kernel is the operating system and its release ("linux 6.1.0-...").
	Kernel string `json:"kernel,omitempty"`
}

var (
	machineOnce   sync.Once
	cachedMachine Machine
)

// ReadMachine returns the Machine this process runs on; it is read once.
func ReadMachine() Machine {
	machineOnce.Do(func() {
		cachedMachine = Machine{CPUs: runtime.NumCPU(), Kernel: runtime.GOOS}
		if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
			cachedMachine.CPU, cachedMachine.Virtualized = parseCPUInfo(b)
		}
		if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
			cachedMachine.Kernel += " " + strings.TrimSpace(string(b))
		}
	})
	return cachedMachine
}

// parseCPUInfo takes the first processor's model of a Linux
// /proc/cpuinfo, and whether its flags name a hypervisor.
func parseCPUInfo(b []byte) (cpu string, virtualized bool) {
	var name, family, model, stepping string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20) // flags lines are long
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			if strings.TrimSpace(sc.Text()) == "" && name != "" {
				break // the first processor's block is over
			}
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name", "Model Name", "cpu model", "Model":
			// "cpu model": MIPS's spelling; "Model": a
			// board's name, after the processors, on some ARM
			// systems (arm64's own blocks name no model).
			if name == "" {
				name = v
			}
		case "cpu family":
			family = v
		case "model":
			model = v
		case "stepping":
			stepping = v
		case "flags", "Features":
			virtualized = virtualized || strings.Contains(" "+v+" ", " hypervisor ")
		}
	}
	cpu = name
	if family != "" && model != "" {
		cpu = strings.TrimSpace(fmt.Sprintf("%s (family %s model %s", name, family, model))
		if stepping != "" {
			cpu += " stepping " + stepping
		}
		cpu += ")"
	}
	return cpu, virtualized
}
