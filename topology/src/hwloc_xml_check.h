// What an hwloc XML export must look like before hwloc 2.x may read it. hwloc's own XML reader
// (the one Debian's libhwloc uses without its libxml2 plugin) trusts its input: the fuzz
// campaigns crashed it on a NUL byte, a tag cut off before its '>', a NUMANode without one of
// its sets and a bitmap starting with a comma, and kept it busy for seconds on a PU without
// os_index. So the whole file is checked in lstopo's shape
// first. Private to the topology library.
#pragma once

#include <string>

namespace pilot::topology {

/// "" when every byte of `xml` is in the shape lstopo writes (below), else "line N: what",
/// naming the first place it is not:
/// - no NUL byte; an optional <?xml ...?> and <!DOCTYPE ...>, comments anywhere;
/// - one root element, <topology>, and every element closed in order, nested at most 256 deep;
/// - tags of a name and name="value" pairs, then '>' or "/>"; no '<' in a value and every '&'
///   of a value or a text one of XML's entities;
/// - every <object> but I/O and Misc ones with one type and the four sets lstopo writes, a PU
///   or NUMA node with an os_index below 65536;
/// - every ...cpuset and ...nodeset a bitmap as lstopo writes it.
std::string unsafeHwlocXml(const std::string& xml);

}  // namespace pilot::topology
