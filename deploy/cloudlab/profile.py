"""mpq on CloudLab: two hosts, a server and a client, joined by two shaped links.

Each link is one path of an mpq experiment: link i joins the client's
10.i.0.1/24 and the server's 10.i.0.2/24 (the addresses mpq's namespace
testbed gives path i), shaped by CloudLab's delay nodes with the rate,
one-way delay and loss of the parameters. Every node runs
deploy/cloudlab/setup.sh at boot (from the profile's repository, which
CloudLab checks out in /local/repository): it installs Go, builds mpq into
/usr/local/bin and makes sure chrony keeps the clock in time.

Instructions:
Wait until both nodes are ready (the startup scripts finished), then, on
the server: mpq run /local/repository/experiments/quickstart.toml --role
server --listen 10.0.0.2:4433 --listen 10.1.0.2:4433; on the client: mpq
run /local/repository/experiments/quickstart.toml --role client --connect
10.0.0.2:4433 --connect 10.1.0.2:4433 --local 10.0.0.1 --local 10.1.0.1.
Copy the server's results/quickstart directory over the client's (it
adds each run's server directory beside its client directory) and run mpq merge --correct-clock results/quickstart (it puts the
server's times on the client's clock by the offset the client measured).
docs/guides/testbeds.md has the whole walk-through.

The topology is built by build(), over geni.rspec.pg only. In the portal
the parameters come from geni.portal; outside it (python3 profile.py, with
PyPI's geni-lib and six, whose geni.portal does not load on Python 3) the
script prints the request RSpec for the default parameters, or for
key=value arguments.
"""

import sys

# The defaults of the parameters: the reference paper's two paths
# (100 Mbit/s, 50 ms round trip, 0.05 % loss) on Ubuntu 22.04.
DEFAULTS = {
    "image": "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD",
    "hardware": "",
    "go_version": "1.26.0",
    # Per link: rate in kbit/s, one-way delay in ms, loss as a fraction.
    "rate0": 100000,
    "delay0": 25,
    "loss0": 0.0005,
    "rate1": 100000,
    "delay1": 25,
    "loss1": 0.0005,
}

LINKS = 2


class Params(object):
    """Parameter values by attribute, as geni.portal binds them."""

    def __init__(self, values):
        self.__dict__.update(values)


def build(request, params, pg):
    """Adds the two nodes and the two links to request (a pg.Request)."""
    nodes = {}
    for name in ("server", "client"):
        node = pg.RawPC(name)
        node.disk_image = params.image
        if params.hardware:
            node.hardware_type = params.hardware
        node.addService(pg.Execute(
            shell="bash",
            command="sudo /local/repository/deploy/cloudlab/setup.sh %s >/local/setup.log 2>&1" % params.go_version))
        request.addResource(node)
        nodes[name] = node
    for i in range(LINKS):
        link = pg.Link("path%d" % i)
        for name, host in (("client", 1), ("server", 2)):
            iface = nodes[name].addInterface("if%d" % i)
            iface.addAddress(pg.IPv4Address("10.%d.0.%d" % (i, host), "255.255.255.0"))
            link.addInterface(iface)
        link.bandwidth = int(getattr(params, "rate%d" % i))
        link.latency = int(getattr(params, "delay%d" % i))
        link.plr = float(getattr(params, "loss%d" % i))
        # Shaped by a delay node, never multiplexed with other traffic.
        link.best_effort = False
        link.link_multiplexing = False
        request.addResource(link)
    return request


def portal_main(portal, pg):
    """Runs the profile in the CloudLab portal."""
    pc = portal.Context()
    pc.defineParameter("image", "Disk image of both nodes", portal.ParameterType.IMAGE, DEFAULTS["image"])
    pc.defineParameter("hardware", "Hardware type (empty: any)", portal.ParameterType.NODETYPE, DEFAULTS["hardware"])
    pc.defineParameter("go_version", "Go version the nodes install", portal.ParameterType.STRING, DEFAULTS["go_version"])
    for i in range(LINKS):
        pc.defineParameter("rate%d" % i, "Path %d rate (kbit/s)" % i, portal.ParameterType.BANDWIDTH, DEFAULTS["rate%d" % i])
        pc.defineParameter("delay%d" % i, "Path %d one-way delay (ms)" % i, portal.ParameterType.LATENCY, DEFAULTS["delay%d" % i])
        pc.defineParameter("loss%d" % i, "Path %d loss (fraction, each way)" % i, portal.ParameterType.STRING, str(DEFAULTS["loss%d" % i]))
    params = pc.bindParameters()
    for i in range(LINKS):
        try:
            loss = float(getattr(params, "loss%d" % i))
        except ValueError:
            loss = -1
        if not 0 <= loss < 1:
            pc.reportError(portal.ParameterError("the loss must be a fraction in [0, 1)", ["loss%d" % i]))
    pc.verifyParameters()
    request = pc.makeRequestRSpec()
    build(request, params, pg)
    pc.printRequestRSpec(request)


def standalone_main(argv, pg):
    """Prints the request RSpec for the defaults, or key=value arguments."""
    values = dict(DEFAULTS)
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in values:
            sys.stderr.write("profile.py: want key=value with key one of %s, got %r\n" % (", ".join(sorted(values)), arg))
            return 2
        values[key] = type(DEFAULTS[key])(value)
    request = pg.Request()
    build(request, Params(values), pg)
    xml = request.toXMLString(pretty_print=True)
    if not isinstance(xml, str):
        xml = xml.decode("utf-8")
    sys.stdout.write(xml)
    return 0


def main():
    import geni.rspec.pg as pg
    try:
        import geni.portal as portal
    except (ImportError, SyntaxError):
        # PyPI's geni-lib 0.9.9.4: geni.portal is Python 2 only.
        portal = None
    if portal is not None and len(sys.argv) == 1:
        portal_main(portal, pg)
        return 0
    return standalone_main(sys.argv[1:], pg)


if __name__ == "__main__":
    sys.exit(main())
