"""Brocade Fabric OS 9 simulator: a 7840 extension switch (FC 0-23, VE 24-43, GE ge0-ge17) over telnet and SSH.

Formats follow real FOS 8/9 session logs: the ``NAME:USER>`` prompt, the ATTENTION banner,
``Operation Succeeded.``, the ``Object exists.`` family of extension errors, silent zoning commands,
``(yes, y, no, n): [no]`` confirmations, the ``Type <CR> to continue, Q<CR> to stop:`` pager and
``rbash: X: command not found``. Where no capture exists (some "does not exist" wordings, the circuit
detail keys, the peer identity shown on an online VE row) the text is reconstructed in the same style
and marked ``[R]`` next to it.

Grammar: ``switchshow``, ``islshow``, ``version``, ``timeout``, ``exit``/``logout``;
``portcfg ipif|iproute|fciptunnel|fcipcircuit ...`` (portcfg.py); ``portshow fciptunnel|fcipcircuit
[<ve>|all] [-c] [--lifetime]``, ``portshow ipif|iproute``, ``portcfgshow ipif|iproute``, ``portcfgshow
fciptunnel [<ve>|all] [-c]``, ``portcfgshow fcipcircuit [all|<ve> [<cid>]]`` (show.py);
``zonecreate|zoneadd|zoneremove|zonedelete``, ``alicreate|aliadd|aliremove|alidelete``,
``cfgcreate|cfgadd|cfgremove|cfgdelete|cfgclear|cfgsave|cfgenable|cfgdisable [-force]``,
``cfgtransabort [token]``, ``defzone --show|--allaccess|--noaccess``
(zoning_commands.py); ``cfgshow``/``zoneshow``, ``cfgactvshow``, ``cfgtransshow`` (show.py, laid out by
zoning_show.py). Long output is paged on telnet sessions only (FOS 9 SSH session logs show none).

The package by job: personality.py (login, prompt, dispatch, links), extension.py (the extension
configuration: ipif, iproute, tunnels and circuits), portcfg.py (the command that changes it), show.py
(what the switch shows), zoning.py (zoning state and the one zoning transaction), zoning_commands.py
(the commands that change zoning), texts.py (fixed texts).

Extension configuration is written to flash as it is applied (as on the device), so it is mirrored
into ``saved`` at once; zoning edits are a session's open transaction (in memory) until ``cfgsave``,
``cfgenable`` or ``cfgdisable`` commits them.
"""

from simulators.brocade_fos.personality import FosPersonality

__all__ = ["FosPersonality"]
