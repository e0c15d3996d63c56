// What the coordinator does to the network and the listeners: processes started inside a
// network namespace, nftables and link commands there, and the two hostile peers (a flood of
// strangers, a peer with the wrong secret), each a forked child reporting one line on a pipe.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace soak {

/// fork(); the child dies with the coordinator (PR_SET_PDEATHSIG), enters namespace `ns`
/// (/run/netns/NS) and exits with body()'s value. -1 when fork fails.
pid_t forkInNamespace(const std::string& ns, const std::function<int()>& body);

/// Runs a tool (ip, nft) to completion; its output goes to `output` (or nowhere). The exit code,
/// or -1 when it could not run.
int runTool(const std::vector<std::string>& argv, std::string* output = nullptr);

/// Every packet in and out of namespace `ns` dropped (nftables table `inet pilot_soak`), or the
/// table removed again.
bool dropEverything(const std::string& ns, bool drop);
bool setLink(const std::string& ns, const std::string& ifname, bool up);
/// The interface has carrier (LOWER_UP), as the kernel reports it some time after `up`.
bool linkHasCarrier(const std::string& ns, const std::string& ifname);

/// The flooder's body: `count` connections to the listener of `handle` (a quarter each: random
/// bytes, silent, a hello of another protocol version, a hello with a wrong secret); writes
/// "flooding N" on `reportFd` once they are all connected, then waits to be killed.
int floodListener(const unsigned char* handle, int count, int reportFd);

/// The rogue's body: a transport of its own (settings `env`) connects with `handle`'s secret
/// changed in one bit and posts a 1 MiB send; the listener must turn it away, so the send must
/// fail. Writes "rogue-connected" once its connect completed, then "rogue DETECT_MS MESSAGE"
/// (the error, DETECT_MS after that) or "rogue-fail WHY" on `reportFd`.
int wrongSecretPeer(const unsigned char* handle, const std::map<std::string, std::string>& env,
                    int timeoutMs, int reportFd);

}  // namespace soak
