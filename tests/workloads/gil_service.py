"""A Python web service bound by the GIL (tests/e2e/test_verdict_jobs.py): http.server's
ThreadingHTTPServer (a thread per connection) whose handler, serve_one(), computes for 2 ms of
its own CPU time in pure Python per request.

  gil_service.py server          prints "ready pid P port N", serves until killed
  gil_service.py client PORT     8 threads requesting one after the other until killed"""
import http.server
import os
import sys
import threading
import time
import urllib.request


def serve_one():
    t = time.thread_time() + 0.002
    x = 0
    while time.thread_time() < t:  # SERVE
        x += 1
    return x


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        serve_one()
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def client(port):
    def ask():
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/").read()
            except OSError:
                time.sleep(0.01)
    for _ in range(8):
        threading.Thread(target=ask, daemon=True).start()
    while True:
        time.sleep(3600)


def main():
    if sys.argv[1] == "client":
        client(int(sys.argv[2]))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"ready pid {os.getpid()} port {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
