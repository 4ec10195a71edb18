from services.telemetry.service import add_args, setup
from shared.service import serve

serve("telemetry", setup, add_args=add_args)
