// ns-3 (3.37) counterpart of the bbrkit-sim benchmark scenario, for the speed
// comparison in docs/sim.md: N bulk TCP flows (TcpBbr by default) from
// senders on 10 Gbit/s access links through one router whose bottleneck
// link (rate, RTT/2 one way) has a drop-tail FIFO of `buffer` packets, to
// one receiver. MSS 1448, IW 10, SACK, delayed ACKs every 2 segments,
// RTO min 200 ms, pacing on. Prints goodput and the wall time of
// Simulator::Run(). Our own scenario code, built by run.sh; CI never runs it.
#include <chrono>
#include <cstdio>
#include <string>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;

int main(int argc, char *argv[]) {
  std::string tcp = "ns3::TcpBbr";
  std::string rate = "100Mbps";
  double rttMs = 10;
  uint32_t bufferPkts = 84;
  uint32_t flows = 1;
  double seconds = 10;
  CommandLine cmd(__FILE__);
  cmd.AddValue("tcp", "TCP type id (ns3::TcpBbr, ns3::TcpCubic, ...)", tcp);
  cmd.AddValue("rate", "bottleneck rate", rate);
  cmd.AddValue("rttMs", "base RTT in ms", rttMs);
  cmd.AddValue("buffer", "bottleneck FIFO size in packets", bufferPkts);
  cmd.AddValue("flows", "number of bulk flows", flows);
  cmd.AddValue("seconds", "simulated seconds", seconds);
  cmd.Parse(argc, argv);

  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue(tcp));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 27));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 27));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
  Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(true));

  NodeContainer senders;
  senders.Create(flows);
  NodeContainer routerRx;
  routerRx.Create(2);
  Ptr<Node> router = routerRx.Get(0);
  Ptr<Node> rx = routerRx.Get(1);

  InternetStackHelper stack;
  stack.InstallAll();

  PointToPointHelper access;
  access.SetDeviceAttribute("DataRate", StringValue("10Gbps"));
  access.SetChannelAttribute("Delay", TimeValue(MicroSeconds(0)));

  PointToPointHelper bottleneck;
  bottleneck.SetDeviceAttribute("DataRate", StringValue(rate));
  bottleneck.SetChannelAttribute("Delay", TimeValue(MicroSeconds(rttMs * 500.0)));
  bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", QueueSizeValue(QueueSize("1p")));

  Ipv4AddressHelper addr;
  addr.SetBase("10.1.0.0", "255.255.255.0");
  NetDeviceContainer bdev = bottleneck.Install(router, rx);
  TrafficControlHelper tch;
  tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                       QueueSizeValue(QueueSize(std::to_string(bufferPkts) + "p")));
  tch.Install(bdev);
  Ipv4InterfaceContainer bif = addr.Assign(bdev);

  for (uint32_t i = 0; i < flows; ++i) {
    NetDeviceContainer d = access.Install(senders.Get(i), router);
    addr.SetBase(("10.2." + std::to_string(i) + ".0").c_str(), "255.255.255.0");
    addr.Assign(d);
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  ApplicationContainer sinks;
  for (uint32_t i = 0; i < flows; ++i) {
    uint16_t port = 5000 + i;
    PacketSinkHelper sink("ns3::TcpSocketFactory",
                          InetSocketAddress(Ipv4Address::GetAny(), port));
    sinks.Add(sink.Install(rx));
    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(bif.GetAddress(1), port));
    src.SetAttribute("MaxBytes", UintegerValue(0));
    src.SetAttribute("SendSize", UintegerValue(1448 * 16));
    ApplicationContainer a = src.Install(senders.Get(i));
    a.Start(Seconds(0));
  }
  sinks.Start(Seconds(0));
  Simulator::Stop(Seconds(seconds));

  auto t0 = std::chrono::steady_clock::now();
  Simulator::Run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  uint64_t total = 0;
  for (uint32_t i = 0; i < sinks.GetN(); ++i) {
    total += DynamicCast<PacketSink>(sinks.Get(i))->GetTotalRx();
  }
  std::printf("ns3 tcp=%s flows=%u rate=%s rtt_ms=%.1f simulated_s=%.1f goodput_bps=%.0f wall_s=%.3f\n",
              tcp.c_str(), flows, rate.c_str(), rttMs, seconds, total * 8.0 / seconds, wall);
  Simulator::Destroy();
  return 0;
}
