from services.planner.service import setup
from shared.service import serve

serve("planner", setup)
