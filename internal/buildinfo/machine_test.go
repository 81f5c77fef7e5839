package buildinfo

import (
	"runtime"
	"testing"
)

func TestParseCPUInfo(t *testing.T) {
	for _, tc := range []struct {
		name, in, cpu string
		virt          bool
	}{
		{"x86 in a VM, first processor only",
			"processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\nstepping\t: 1\nflags\t\t: fpu vme hypervisor lahf_lm\n\n" +
				"processor\t: 1\ncpu family\t: 25\nmodel\t\t: 9\nmodel name\t: Other\nstepping\t: 3\nflags\t\t: fpu\n",
			"AMD EPYC (family 26 model 2 stepping 1)", true},
		{"x86 bare metal",
			"processor\t: 0\ncpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz\nstepping\t: 4\nflags\t\t: fpu vmx hypervisorx\n",
			"Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz (family 6 model 85 stepping 4)", false},
		{"arm64 without a model name",
			"processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n",
			"", false},
		{"board model at the end", "processor\t: 0\nFeatures\t: fp\n\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n", "Raspberry Pi 4 Model B Rev 1.4", false},
		{"empty", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpu, virt := parseCPUInfo([]byte(tc.in))
			if cpu != tc.cpu || virt != tc.virt {
				t.Errorf("got %q, %v; want %q, %v", cpu, virt, tc.cpu, tc.virt)
			}
		})
	}
}

func TestReadMachine(t *testing.T) {
	m := ReadMachine()
	if m.CPUs != runtime.NumCPU() || m.Kernel == "" {
		t.Fatalf("%+v", m)
	}
	if runtime.GOOS == "linux" && m.CPU == "" {
		t.Logf("no CPU model in /proc/cpuinfo here: %+v", m)
	}
}
