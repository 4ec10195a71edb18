from services.decomposer.service import setup
from shared.service import serve

serve("decomposer", setup)
