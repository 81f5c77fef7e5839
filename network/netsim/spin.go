package netsim

import _ "unsafe" // go:linkname

// spinPause tells the processor that the caller spins (x86's PAUSE,
// arm64's YIELD, four of them): the core gives its execution resources
// to a hyperthread sibling, which may be the other part's CPU, and the
// loop checks its counter less often.
func spinPause() { procyield(4) }

// procyield is the runtime's spin-wait hint, the one its own locks use.
// The runtime keeps its signature for packages that link to it (Go issue
// 67401), which spares netsim assembly of its own per architecture.
//
//go:linkname procyield runtime.procyield
func procyield(cycles uint32)
