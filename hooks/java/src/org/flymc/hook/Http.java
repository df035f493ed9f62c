package org.flymc.hook;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A blocking HTTP/1.1 exchange on one kept-alive socket, on the calling thread. The JDK's
 * HttpClient hands every request to its selector and executor threads; on a loaded machine
 * those hand-offs cost milliseconds per report, and a node reports several times per event.
 * Requests on one connection take turns (the event server answers in well under a
 * millisecond). Only for the server's answers: a status line, headers with Content-Length, a body.
 */
final class Http {
    private final String host;
    private final int port;
    private Socket sock;
    private InputStream in;
    private OutputStream out;

    Http(String server) {
        int colon = server.lastIndexOf(':');
        this.host = server.substring(0, colon);
        this.port = Integer.parseInt(server.substring(colon + 1));
    }

    /** An answer: its status and body. */
    static final class Answer {
        final int status;
        final String body;

        Answer(int status, String body) {
            this.status = status;
            this.body = body;
        }
    }

    /** POST `body` to `path`; one retry on a new connection when a kept-alive one was closed. */
    synchronized Answer post(String path, String token, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        String head = "POST " + path + " HTTP/1.1\r\nHost: " + host + ":" + port
            + "\r\nContent-Type: application/json\r\nX-FlyMC-Token: " + token
            + "\r\nContent-Length: " + b.length + "\r\n\r\n";
        for (int attempt = 0;; attempt++) {
            boolean reused = sock != null;
            try {
                if (sock == null) {
                    sock = new Socket(host, port);
                    sock.setTcpNoDelay(true);
                    sock.setSoTimeout(60_000);
                    in = new BufferedInputStream(sock.getInputStream());
                    out = sock.getOutputStream();
                }
                byte[] h = head.getBytes(StandardCharsets.US_ASCII);
                byte[] all = new byte[h.length + b.length];
                System.arraycopy(h, 0, all, 0, h.length);
                System.arraycopy(b, 0, all, h.length, b.length);
                out.write(all);
                out.flush();
                return read();
            } catch (IOException e) {
                close();
                if (!reused || attempt > 0) {
                    throw e;
                }
            }
        }
    }

    private Answer read() throws IOException {
        String status = line();
        if (status == null || !status.startsWith("HTTP/1.")) {
            throw new IOException("not an HTTP answer: " + status);
        }
        int code = Integer.parseInt(status.split(" ", 3)[1]);
        int length = -1;
        boolean close = false;
        for (String l = line(); l != null && !l.isEmpty(); l = line()) {
            int c = l.indexOf(':');
            if (c < 0) {
                continue;
            }
            String k = l.substring(0, c).trim().toLowerCase(java.util.Locale.ROOT);
            String v = l.substring(c + 1).trim();
            if (k.equals("content-length")) {
                length = Integer.parseInt(v);
            } else if (k.equals("connection") && v.equalsIgnoreCase("close")) {
                close = true;
            } else if (k.equals("transfer-encoding")) {
                throw new IOException("unexpected Transfer-Encoding " + v);
            }
        }
        if (length < 0) {
            throw new IOException("an answer without Content-Length");
        }
        byte[] body = in.readNBytes(length);
        if (body.length < length) {
            throw new IOException("the connection closed inside an answer");
        }
        if (close) {
            close();
        }
        return new Answer(code, new String(body, StandardCharsets.UTF_8));
    }

    private String line() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream(64);
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                if (b.size() == 0) {
                    throw new IOException("the connection closed");
                }
                break;
            }
            if (c != '\r') {
                b.write(c);
            }
        }
        return b.toString(StandardCharsets.US_ASCII);
    }

    synchronized void close() {
        if (sock != null) {
            try {
                sock.close();
            } catch (IOException e) {
                // it is gone either way
            }
        }
        sock = null;
        in = null;
        out = null;
    }
}
