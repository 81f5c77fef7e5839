// ns3_bulk: mpq's speed-2x100 work in ns-3 (packet-level TCP, no
// cryptography), for bench/peers: one saturated TCP download on each of
// one or two point-to-point links of 100 Mbit/s and 25 ms one way, each
// direction behind a drop-tail device queue of 625,000 bytes (50 ms at
// the link's rate), 1350-byte IP packets, NewReno.
//
// usage: ns3_bulk [--links=1|2] [--duration=SECONDS]
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>
#include <string>

int main(int argc, char* argv[])
{
    uint32_t links = 1;
    double duration = 20;
    ns3::CommandLine cmd;
    cmd.AddValue("links", "links, one download on each (1 or 2)", links);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.Parse(argc, argv);
    if (links < 1 || links > 2 || duration <= 0) {
        std::fprintf(stderr, "ns3_bulk: --links is 1 or 2, --duration positive\n");
        return 2;
    }

    // 1350-byte IP packets: 20 bytes of IP, 20 of TCP, 12 of timestamps.
    const uint32_t segment = 1350 - 52;
    ns3::Config::SetDefault("ns3::TcpL4Protocol::SocketType", ns3::TypeIdValue(ns3::TcpNewReno::GetTypeId()));
    ns3::Config::SetDefault("ns3::TcpSocket::SegmentSize", ns3::UintegerValue(segment));
    // Buffers far above the path's 1.25 MB of bandwidth-delay product:
    // the congestion window alone limits the sender.
    ns3::Config::SetDefault("ns3::TcpSocket::SndBufSize", ns3::UintegerValue(16u << 20));
    ns3::Config::SetDefault("ns3::TcpSocket::RcvBufSize", ns3::UintegerValue(16u << 20));

    ns3::NodeContainer hosts;
    hosts.Create(2); // 0 receives, 1 sends
    ns3::InternetStackHelper internet;
    internet.Install(hosts);

    ns3::PointToPointHelper link;
    link.SetDeviceAttribute("DataRate", ns3::StringValue("100Mbps"));
    link.SetChannelAttribute("Delay", ns3::StringValue("25ms"));
    link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns3::QueueSizeValue(ns3::QueueSize("625000B")));

    ns3::ApplicationContainer sinks;
    ns3::ApplicationContainer senders;
    for (uint32_t i = 0; i < links; i++) {
        ns3::NetDeviceContainer devices = link.Install(hosts.Get(0), hosts.Get(1));
        ns3::Ipv4AddressHelper addresses;
        std::string subnet = "10." + std::to_string(i + 1) + ".0.0";
        addresses.SetBase(subnet.c_str(), "255.255.255.0");
        ns3::Ipv4InterfaceContainer ifaces = addresses.Assign(devices);
        // The device queue is the bottleneck's only queue (Assign put a
        // queue disc in front of it).
        ns3::TrafficControlHelper().Uninstall(devices);
        uint16_t port = 443 + i;
        ns3::PacketSinkHelper sink("ns3::TcpSocketFactory", ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port));
        sinks.Add(sink.Install(hosts.Get(0)));
        ns3::BulkSendHelper sender("ns3::TcpSocketFactory", ns3::InetSocketAddress(ifaces.GetAddress(0), port));
        sender.SetAttribute("MaxBytes", ns3::UintegerValue(0));
        senders.Add(sender.Install(hosts.Get(1)));
    }
    sinks.Start(ns3::Seconds(0));
    senders.Start(ns3::Seconds(0));
    ns3::Simulator::Stop(ns3::Seconds(duration));
    ns3::Simulator::Run();

    uint64_t received = 0;
    for (uint32_t i = 0; i < sinks.GetN(); i++) {
        received += ns3::DynamicCast<ns3::PacketSink>(sinks.Get(i))->GetTotalRx();
    }
    std::printf("links=%u sim_s=%.3f received=%llu goodput_mbit=%.1f\n", links, duration,
        (unsigned long long)received, received * 8.0 / duration / 1e6);
    ns3::Simulator::Destroy();
    return 0;
}
