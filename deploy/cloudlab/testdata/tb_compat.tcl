# A stand-in for Emulab's tb_compat.tcl, for TestNSFile (loaded before the NS
# file, whose own "source tb_compat.tcl" it then skips): it knows the
# commands mpq.ns uses (any other is an error, as a misspelt one would be
# on Emulab) and, at "$ns run", prints the topology they made, one fact a
# line, with the nodes and links named after the variables that hold
# them, as Emulab names them.
set ::nodes {}
set ::links {}
set ::facts {}

proc new {class} {
    if {$class ne "Simulator"} { error "new $class: only Simulator" }
    return ns_sim
}

proc ns_sim {cmd args} {
    switch -- $cmd {
        node {
            if {[llength $args] != 0} { error "node takes no arguments" }
            set n node[llength $::nodes]
            lappend ::nodes $n
            return $n
        }
        duplex-link {
            if {[llength $args] != 5} { error "duplex-link A B BANDWIDTH DELAY QUEUE" }
            lassign $args a b bw delay queue
            foreach x [list $a $b] { if {[lsearch $::nodes $x] < 0} { error "duplex-link: $x is not a node" } }
            if {![regexp {^[0-9.]+(Mb|kb|Gb)$} $bw]} { error "duplex-link: bandwidth $bw" }
            if {![regexp {^[0-9.]+ms$} $delay]} { error "duplex-link: delay $delay" }
            set l link[llength $::links]
            lappend ::links $l
            lappend ::facts [list link $l $a $b $bw $delay $queue]
            return $l
        }
        rtproto { lappend ::facts [list rtproto {*}$args] }
        run { report }
        default { error "\$ns $cmd: not known to this stand-in" }
    }
}

proc need {kind x} {
    if {[lsearch [set ::${kind}s] $x] < 0} { error "$x is not a $kind" }
}
proc tb-set-node-os {n os} { need node $n; lappend ::facts [list os $n $os] }
proc tb-set-node-startcmd {n cmd} { need node $n; lappend ::facts [list startcmd $n $cmd] }
proc tb-set-link-loss {l loss} {
    need link $l
    if {![string is double -strict $loss] || $loss < 0 || $loss >= 1} { error "tb-set-link-loss: $loss" }
    lappend ::facts [list loss $l $loss]
}
proc tb-set-ip-link {n l ip} { need node $n; need link $l; lappend ::facts [list ip $n $l $ip] }
proc tb-set-netmask {l mask} { need link $l; lappend ::facts [list netmask $l $mask] }

# report prints the facts with each node and link under its variable's
# name.
proc report {} {
    foreach v [info globals] {
        if {[array exists ::$v]} { continue }
        set val [set ::$v]
        if {[lsearch $::nodes $val] >= 0 || [lsearch $::links $val] >= 0} { set name($val) $v }
    }
    foreach f $::facts {
        set out {}
        foreach w $f {
            if {[info exists name($w)]} { lappend out $name($w) } else { lappend out $w }
        }
        puts [join $out "\t"]
    }
}

# The NS file sources tb_compat.tcl itself: this file stands in for it.
rename source tcl_source
proc source {file} {
    if {[file tail $file] eq "tb_compat.tcl"} { return }
    uplevel 1 [list tcl_source $file]
}
