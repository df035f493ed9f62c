// Disk writes through the default dictionary (RandomAccessFile, Files.write, FileChannel.force)
// and through a method annotated @FlyMCDisk; the file name comes from a constant when there is one.
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;

@FlyMCMessage(kind = "append")
class Append {
    long index;
    long entry;
}

@FlyMCMessage(kind = "vote")
class Vote {
    long term;
}

class Log {
    static final String LOG_FILE = "raft.log";
    @FlyMCNodeState long lastIndex;
    @FlyMCNodeState long votedTerm;
    FileChannel channel;
    Path metaPath;

    @FlyMCHandler
    void onAppend(Append a) throws Exception {
        RandomAccessFile f = new RandomAccessFile(LOG_FILE, "rw");
        f.writeLong(a.entry);
        channel.force(true);
        lastIndex = a.index;
    }

    @FlyMCHandler
    void onVote(Vote v) throws Exception {
        if (v.term > votedTerm) {
            votedTerm = v.term;
            saveMeta(v.term);
        }
    }

    @FlyMCDisk(file = "meta")
    void saveMeta(long t) throws Exception {
        Files.write(metaPath, new byte[] {(byte) t});
    }
}
