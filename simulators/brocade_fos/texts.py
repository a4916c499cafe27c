"""Brocade FOS's fixed texts: the login notice, usage messages of ``portcfg`` and the flag legends of
the extension tables, as FOS 8/9 prints them."""

ATTENTION = (
    "--------------------------------------------------------------------------------------------\n"
    "                                       ATTENTION\n"
    "  It is recommended that you change the default passwords for all the switch accounts.\n"
    " Refer to the product release notes and administrators guide if you need further information.\n"
    " --------------------------------------------------------------------------------------------\n"
    "\n"
    "-----------------------------------------------------------------\n"
)

RULE = "-" * 80

TUNNEL_USAGE = """Usage:   portCfg fciptunnel [<slot>/]<port> <option> [<args>]

Option:  create              - Create the specified tunnel
         modify              - Modify the specified tunnel
         delete              - Delete the specified tunnel
         help                - Show this usage message

Optional Arguments:
  -c,--compression none|deflate|aggr-deflate|fast-deflate
                             - Set the tunnel compression mode.
  -d,--description <string>  - Set the tunnel description.
  -f,--fastwrite enable|disable
                             - Set FC fastwrite.
  -t,--tape-pipelining default|read|write|disable
                             - Set tape pipelining.
  -i,--ipsec <policy>|none   - Set the IPsec policy.
  -n,--remote-wwn <wwn>      - Set the WWN of the remote FC entity.
  -L,--load-leveling default|failover|spillover
                             - Set the load-leveling algorithm.

Example: portcfg fciptunnel 24 create --compression none
"""

CIRCUIT_USAGE = """Usage:   portCfg fcipcircuit [<slot>/]<port> <option> <circuit id> [<args>]

Option:  create              - Create the specified circuit
         modify              - Modify the specified circuit
         delete              - Delete the specified circuit
         help                - Show this usage message

Optional Arguments:
  -S,--local-ip <ipaddr>|none        - Set the local IP address.
  -D,--remote-ip <ipaddr>|none       - Set the remote IP address.
  -b,--min-comm-rate <kbps>          - Set the minimum committed rate.
  -B,--max-comm-rate <kbps>          - Set the maximum committed rate.
  -k,--keepalive-timeout <ms>        - Set the keepalive timeout.
  -a,--admin-status enable|disable   - Set the circuit admin status.
  -x,--metric 0|1                    - Set the circuit metric.
  -g,--failover-group 0-9            - Set the failover group.

Example: portcfg fcipcircuit 24 create 0 --local-ip 10.1.1.10 --remote-ip 10.2.1.10 -b 1000000 -B 1000000
"""

IPIF_USAGE = """Usage:   portCfg ipif [<slot>/]<port> create|modify|delete <ipaddr>/<pfx> [mtu <mtu>|auto]
                  [vlan <vlanid>]
         portCfg ipif [<slot>/]<port> create|modify|delete <ipaddr> netmask <mask> [mtu <mtu>|auto]
                  [vlan <vlanid>]
         portCfg iproute [<slot>/]<port> create|modify|delete <ipaddr>/<pfx> <gateway>
         portCfg iproute [<slot>/]<port> create|modify|delete <ipaddr> netmask <mask> <gateway>
"""

PORTCFG_USAGE = """Usage: portCfg <action> [<slot>/]<port> <option> [<args>]

Action:  ipif | iproute | fciptunnel | fcipcircuit | ipsec-policy
"""

TUNNEL_FLAG_LEGEND = [
    " Flags (tunnel): l=Legacy QOS Mode",
    "                 i=IPSec f=Fastwrite T=TapePipelining F=FICON r=ReservedBW",
    "                 a=FastDeflate d=Deflate D=AggrDeflate P=Protocol",
    "                 I=IP-Ext",
]
CIRCUIT_FLAG_LEGEND = [
    " Flags (circuit): h=HA-Configured v=VLAN-Tagged p=PMTU i=IPSec 4=IPv4 6=IPv6",
    "                 ARL a=Auto r=Reset s=StepDown t=TimedStepDown  S=SLA",
]
# After the tunnel legend in a combined (-c) table.
CIRCUIT_FLAG_LEGEND_COMBINED = [
    "      (circuit): h=HA-Configured v=VLAN-Tagged p=PMTU i=IPSec 4=IPv4 6=IPv6",
    "                 ARL a=Auto r=Reset s=StepDown t=TimedStepDown  S=SLA",
]
