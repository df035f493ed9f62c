package org.flymc.hook;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The hook protocol (hooks/PROTOCOL.md) as plain HTTP/1.1 over one kept-alive socket per channel:
 * one for reports and done, one for the long poll, so a report never waits behind a poll.
 *
 * <p>Not the JDK's HttpClient: each of its requests hops between its selector thread and an
 * executor thread; on a loaded 2-core machine a ZooKeeper node's `done` took 3.6-4.2 ms through
 * it and about 1 ms over a plain socket, and every report pays the same inside the event. It also lets a pause
 * close the connections, so a snapshot holds none. FLYMC_HOOK_HTTP=jdk brings the JDK's client
 * back, for `flymc bench real` to measure the difference.
 */
final class Net {
    private final String server;
    private final String token;
    private final Channel calls = new Channel();
    private final Channel polls = new Channel();
    /** The JDK's clients (calls, polls) when FLYMC_HOOK_HTTP=jdk, else null. */
    private final HttpClient[] jdk;

    Net(String server, String token) {
        this.server = server;
        this.token = token;
        this.jdk = "jdk".equals(System.getenv("FLYMC_HOOK_HTTP"))
            ? new HttpClient[] {client("flymc-http"), client("flymc-poll-http")}
            : null;
    }

    private static HttpClient client(String name) {
        AtomicInteger n = new AtomicInteger();
        return HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .executor(Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, name + "-" + n.incrementAndGet());
                t.setDaemon(true);
                Quiescence.agentThreads.add(t);
                return t;
            }))
            .build();
    }

    /**
     * The same server on new connections; this one's are closed (a pause: the process is
     * snapshotted next, and a copy restored from it must not find a connection to flymc). The
     * JDK's client cannot close its pooled ones (before Java 21): they stay idle and unused.
     */
    Net fresh() {
        calls.close();
        polls.close();
        return new Net(server, token);
    }

    /** One connection, used by one request at a time. */
    private static final class Channel {
        Socket socket;
        InputStream in;
        OutputStream out;

        void close() {
            synchronized (this) {
                if (socket != null) {
                    try {
                        socket.close();
                    } catch (IOException e) {
                        // Closing is all that is wanted.
                    }
                }
                socket = null;
            }
        }
    }

    /** POST a request; returns the parsed answer. Exits the JVM when flymc is gone or refuses us. */
    @SuppressWarnings("unchecked")
    Map<String, Object> post(String endpoint, Map<String, Object> body, boolean poll) {
        byte[] json = Json.write(body).getBytes(StandardCharsets.UTF_8);
        byte[] head = ("POST /v1/" + endpoint + " HTTP/1.1\r\nHost: " + server
            + "\r\nContent-Type: application/json\r\nX-FlyMC-Token: " + token
            + "\r\nContent-Length: " + json.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
        Channel ch = poll ? polls : calls;
        for (int attempt = 0;; attempt++) {
            Response r;
            try {
                if (jdk != null) {
                    r = jdkExchange(jdk[poll ? 1 : 0], endpoint, json, poll);
                } else {
                    synchronized (ch) {
                        r = exchange(ch, head, json, poll ? 90_000 : 60_000);
                    }
                }
            } catch (ConnectException e) {
                Hook.log("event server is gone (" + e + "); exiting");
                Runtime.getRuntime().halt(75);
                return null;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted talking to flymc");
            } catch (IOException e) {
                // The server closed the connection before answering: an idle kept-alive one, or a
                // new one closed in a burst of other connections (hooks/PROTOCOL.md,
                // "Connections"). Retry on a new one, after a pause that outlasts such a burst.
                ch.close();
                if (attempt >= 4) {
                    Hook.log("event server unreachable (" + e + "); exiting");
                    Runtime.getRuntime().halt(75);
                }
                if (attempt > 0) {
                    try {
                        Thread.sleep(5L << (2 * attempt));
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("interrupted talking to flymc");
                    }
                }
                continue;
            }
            if (r.status == 200) {
                return (Map<String, Object>) Json.parse(r.body);
            }
            if (r.status == 401 || (r.status == 409 && r.body.contains("\"stale\""))) {
                // flymc ended the run or replaced this incarnation: this process is a leftover.
                Hook.log("event server refused us (" + r.status + "): " + r.body + "; exiting");
                Runtime.getRuntime().halt(75);
            }
            throw new IllegalStateException("flymc refused " + endpoint + " (" + r.status + "): " + r.body);
        }
    }

    private static final class Response {
        int status;
        String body;
    }

    private Response jdkExchange(HttpClient c, String endpoint, byte[] json, boolean poll)
        throws IOException, InterruptedException {
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://" + server + "/v1/" + endpoint))
            .header("Content-Type", "application/json")
            .header("X-FlyMC-Token", token)
            .timeout(Duration.ofSeconds(poll ? 90 : 60))
            .POST(HttpRequest.BodyPublishers.ofByteArray(json))
            .build();
        HttpResponse<String> a = c.send(req, HttpResponse.BodyHandlers.ofString());
        Response r = new Response();
        r.status = a.statusCode();
        r.body = a.body();
        return r;
    }

    /** One request and its answer on the channel's connection (opened when there is none). */
    private Response exchange(Channel ch, byte[] head, byte[] json, int timeoutMs) throws IOException {
        if (ch.socket == null) {
            int colon = server.lastIndexOf(':');
            // host:port, or [v6]:port
            String host = server.substring(0, colon).replace("[", "").replace("]", "");
            Socket s = new Socket();
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(host, Integer.parseInt(server.substring(colon + 1))), 10_000);
            ch.socket = s;
            ch.in = new BufferedInputStream(s.getInputStream());
            ch.out = s.getOutputStream();
        }
        ch.socket.setSoTimeout(timeoutMs);
        byte[] req = new byte[head.length + json.length];
        System.arraycopy(head, 0, req, 0, head.length);
        System.arraycopy(json, 0, req, head.length, json.length);
        ch.out.write(req);
        ch.out.flush();
        Response r = new Response();
        String status = line(ch.in);
        String[] parts = status.split(" ", 3);
        if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
            throw new IOException("not an HTTP answer: " + status);
        }
        r.status = Integer.parseInt(parts[1]);
        long length = -1;
        boolean chunked = false, close = false;
        for (String h = line(ch.in); !h.isEmpty(); h = line(ch.in)) {
            int c = h.indexOf(':');
            if (c < 0) {
                continue;
            }
            String name = h.substring(0, c).trim().toLowerCase(Locale.ROOT);
            String value = h.substring(c + 1).trim();
            if (name.equals("content-length")) {
                length = Long.parseLong(value);
            } else if (name.equals("transfer-encoding")) {
                chunked = value.toLowerCase(Locale.ROOT).contains("chunked");
            } else if (name.equals("connection")) {
                close = value.equalsIgnoreCase("close");
            }
        }
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        if (chunked) {
            for (long n = Long.parseLong(line(ch.in).split(";")[0].trim(), 16); n > 0;
                n = Long.parseLong(line(ch.in).split(";")[0].trim(), 16)) {
                copy(ch.in, b, n);
                line(ch.in);
            }
            while (!line(ch.in).isEmpty()) {
                // trailers
            }
        } else if (length >= 0) {
            copy(ch.in, b, length);
        } else {
            // No length: the body ends with the connection.
            ch.in.transferTo(b);
            close = true;
        }
        r.body = b.toString(StandardCharsets.UTF_8);
        if (close) {
            ch.close();
        }
        return r;
    }

    private static void copy(InputStream in, ByteArrayOutputStream to, long n) throws IOException {
        byte[] buf = new byte[8192];
        while (n > 0) {
            int k = in.read(buf, 0, (int) Math.min(buf.length, n));
            if (k < 0) {
                throw new EOFException("the answer ended early");
            }
            to.write(buf, 0, k);
            n -= k;
        }
    }

    /** One header line without its CRLF. */
    private static String line(InputStream in) throws IOException {
        StringBuilder s = new StringBuilder();
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                throw new EOFException("the connection closed before the answer");
            }
            if (c != '\r') {
                s.append((char) c);
            }
        }
        return s.toString();
    }
}
