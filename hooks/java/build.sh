#!/usr/bin/env bash
# Builds flymc's Java hook (flymc-hook.jar) with javac against Debian's ASM jars, and the
# ZooKeeper integration's helper jar (flymc-zk.jar) against Debian's ZooKeeper jars.
# Usage: hooks/java/build.sh OUT_DIR   (flymc setup zookeeper runs it)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/flymc-java}"
asm=/usr/share/java/asm.jar
commons=/usr/share/java/asm-commons.jar
tree=/usr/share/java/asm-tree.jar
for j in "$asm" "$commons" "$tree"; do
    [ -f "$j" ] || { echo "missing $j: install Debian's libasm-java (apt-get install -y libasm-java)" >&2; exit 1; }
done
command -v javac >/dev/null || { echo "javac is missing: install a JDK (apt-get install -y default-jdk-headless)" >&2; exit 1; }
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/hook" "$tmp/zk"
javac -nowarn -d "$tmp/hook" -cp "$asm:$commons:$tree" $(find "$here/src" -name '*.java')
cat > "$tmp/MANIFEST.MF" <<MF
Premain-Class: org.flymc.hook.Agent
Class-Path: $asm $commons $tree
MF
jar cfm "$out/flymc-hook.jar.tmp" "$tmp/MANIFEST.MF" -C "$tmp/hook" .
mv "$out/flymc-hook.jar.tmp" "$out/flymc-hook.jar"
zk=/usr/share/java/zookeeper.jar
if [ -f "$zk" ] && [ -d "$root/integrations/zookeeper/java" ]; then
    javac -nowarn -d "$tmp/zk" -cp "$zk:/usr/share/java/zookeeper-jute.jar:$tmp/hook" \
        $(find "$root/integrations/zookeeper/java" -name '*.java')
    jar cf "$out/flymc-zk.jar.tmp" -C "$tmp/zk" .
    mv "$out/flymc-zk.jar.tmp" "$out/flymc-zk.jar"
fi
echo "built $out/flymc-hook.jar${zk:+ and $out/flymc-zk.jar}"
