<?php

namespace App\Http\Controllers;

use App\Models\User;
use App\Services\Mailer;
use Illuminate\Http\Request;

/**
 * Sign-up and profile endpoints.
 */
class UserController extends Controller
{
    private Mailer $mailer;

    public function __construct(Mailer $mailer)
    {
        $this->mailer = $mailer;
    }

    /**
     * Create an account and send the welcome mail.
     */
    public function store(Request $request)
    {
        $data = $request->validate(['email' => 'required|email']);
        $user = User::create($data);
        $this->mailer->sendWelcome($user);
        return response()->json($user, 201);
    }

    public function show(int $id)
    {
        $user = User::findOrFail($id);
        return view('users.show', ['user' => $user]);
    }
}

function normalize_email(string $email): string
{
    return strtolower(trim($email));
}
