"""A WebSub hub for newspush's tests: flask-websub 0.4.1's own hub, offline.

Celery runs its tasks eagerly with no broker (task_always_eager, broker memory://), so a
subscription is verified, and a publish distributed, within the request that asked for it.
Usage: python3 hub.py DATABASE [LEASE_SECONDS]; binds a free loopback port and prints
"hub listening on http://127.0.0.1:PORT/hub" when up.
"""
import logging
import sys

from celery import Celery
from flask import Flask
from werkzeug.serving import make_server
from flask_websub.hub import Hub, SQLite3HubStorage

database = sys.argv[1]
lease = int(sys.argv[2]) if len(sys.argv) > 2 else 600

app = Flask(__name__)
app.config["PUBLISH_SUPPORTED"] = True
app.config["HUB_MIN_LEASE_SECONDS"] = 1
app.config["HUB_DEFAULT_LEASE_SECONDS"] = lease
app.config["HUB_MAX_LEASE_SECONDS"] = lease
# The topic's server and the callback are in a test process that a loaded machine may starve:
# the hub's own 3-second limit would drop a publish (it fetches the topic once, no retry).
app.config["REQUEST_TIMEOUT"] = 30

celery = Celery("hub", broker="memory://")
celery.conf.update(task_always_eager=True, task_eager_propagates=False)

hub = Hub(SQLite3HubStorage(database), celery, **app.config)
app.register_blueprint(hub.build_blueprint(url_prefix="/hub"))

logging.basicConfig(level=logging.INFO)

if __name__ == "__main__":
    server = make_server("127.0.0.1", 0, app, threaded=True)
    print(f"hub listening on http://127.0.0.1:{server.server_port}/hub", flush=True)
    server.serve_forever()
