from services.critic.service import setup
from shared.service import serve

serve("critic", setup)
