// Fields reached through `this.`, through locals holding the node object, through a local alias
// of a node-state collection, and through a typed reference to another node-state class.
import java.util.Map;

@FlyMCMessage(kind = "put")
class Put {
    String key;
    long version;
}

class Meta {
    @FlyMCNodeState long version;
}

class Store {
    @FlyMCNodeState Map<String, Long> data;
    @FlyMCNodeState long puts;
    Meta meta;

    @FlyMCHandler
    void onPut(Put p) {
        Store self = this;
        Map<String, Long> d = self.data;
        d.put(p.key, p.version);
        Meta m = this.meta;
        if (p.version > m.version) {
            m.version = p.version;
        }
        this.puts += 1;
    }
}
