package demo;

import java.io.FileOutputStream;
import java.io.IOException;

@FlyMCMessage(kind_field = "type")
class Message {
    static final int PROP = 1;
    static final int PROP_RESP = 2;
    static final int COMMIT = 3;
    int type;
    long ballot;
    String key;
    String value;
    boolean resp;
}

class Acceptor {
    static final String PAXOS_FILE = "paxos";
    @FlyMCNodeState long ballot;
    @FlyMCNodeState String key;
    @FlyMCNodeState String value;
    @FlyMCNodeState int proposeCounter;
    @FlyMCNodeState int majority;
    Network net;

    @FlyMCHandler
    void handle(Message m) {
        if (m.type == Message.PROP && m.ballot > ballot) {
            ballot = m.ballot;
            this.key = m.key;
            this.value = m.value;
            persist();
            reply(m);
        } else if (m.type == Message.PROP_RESP && m.resp == true && proposeCounter < majority) {
            proposeCounter++;
        } else if (m.type == Message.COMMIT) {
            commit(m);
        }
    }

    void persist() {
        try {
            FileOutputStream out = new FileOutputStream(PAXOS_FILE);
            out.write(1);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    void reply(Message m) {
        Message r = new Message();
        r.type = Message.PROP_RESP;
        r.ballot = ballot;
        net.send(r);
    }

    void commit(Message m) {
        if (m.ballot < ballot) {
            return;
        }
        value = m.value;
    }
}
